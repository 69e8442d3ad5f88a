"""CloudFront as AWS has it, answered here instead of by moto.

moto 5.2.5's CloudFront keeps only part of a distribution's configuration (function
associations, policy ids and origin access controls are dropped from what it answers), makes a
distribution Deployed after one read, deletes enabled distributions, ignores ETags, refuses
every reused CallerReference, and has no origin access identities, cache, origin request or
response headers policies, nor function updates and publishing. CloudFront's REST API is
answered here, every configuration kept as the XML it was sent in and answered back as it is:

- distributions (create, with tags, get, get config, update, delete, list, tags by ARN): a
  distribution is `InProgress` for `EMU_CLOUDFRONT_DEPLOY_SECONDS` (default 3) after its
  create and every update, then `Deployed` (with the timing profile on, AWS's figure
  `cloudfront_distribution_deploy_ms` of aws_timing.json, scaled). A delete of an enabled or
  not yet Deployed distribution is refused (409 DistributionNotDisabled); updates and deletes
  need the current ETag (400 InvalidIfMatchVersion without one, 412 PreconditionFailed for a
  stale one); a CallerReference used before answers the same distribution when the
  configuration is the same, 409 DistributionAlreadyExists when it is not; an update cannot
  change it (400 IllegalUpdate). Every `{Quantity, Items}` must agree (400
  InconsistentQuantities), every behavior's origin must exist (404 NoSuchOrigin), every
  behavior needs a cache policy or forwarded values, and every cache, origin request and
  response headers policy, origin access control and function association must exist (the
  function published to LIVE);
- origin access controls and identities (names unique; identities idempotent by
  CallerReference), cache, origin request and response headers policies (names unique, AWS's
  managed policies listed and usable), functions (create, describe and get by stage, update,
  publish to LIVE, delete, list): each with ETags as above, and refused while a distribution
  uses it (409 …InUse).

`POST /moto-api/cloudfront {"deploySeconds": N}` sets the InProgress time at run time (and
cuts what is in progress to at most N seconds from now);
`POST /moto-api/reset` forgets everything. Remaining differences from AWS are listed in
docs/testing.md.
"""

import base64
import json
import os
import random
import re
import string
import threading
import time
import uuid
import xml.etree.ElementTree as ET
from datetime import datetime, timezone
from urllib.parse import parse_qs, unquote

import timing

NS = "http://cloudfront.amazonaws.com/doc/2020-05-31/"
ACCOUNT = "123456789012"
PREFIX = "/2020-05-31"

DEPLOY_SECONDS = [float(os.environ.get("EMU_CLOUDFRONT_DEPLOY_SECONDS", "3"))]

# AWS's managed policies that CDK names (aws-cdk-lib's CachePolicy, OriginRequestPolicy and
# ResponseHeadersPolicy constants): usable by id, listed with Type=managed, never changed.
MANAGED = {
    "cache-policy": {
        "658327ea-f89d-4fab-a63d-7e88639e58f6": "Managed-CachingOptimized",
        "4135ea2d-6df8-44a3-9df3-4b5a84be39ad": "Managed-CachingDisabled",
        "b2884449-e4de-46a7-ac36-70bc7f1ddd6d": "Managed-CachingOptimizedForUncompressedObjects",
        "08627262-05a9-4f76-9ded-b50ca2e3a84f": "Managed-Elemental-MediaPackage",
        "2e54312d-136d-493c-8eb9-b001f22f67d2": "Managed-Amplify",
        "83da9c7e-98b4-4e11-a168-04f0df8e2c65": "UseOriginCacheControlHeaders",
        "4cc15a8a-d715-48a4-82b8-cc0b614638fe": "UseOriginCacheControlHeaders-QueryStrings",
    },
    "origin-request-policy": {
        "acba4595-bd28-49b8-b9fe-13317c0390fa": "Managed-Elemental-MediaTailor-PersonalizedManifests",
        "59781a5b-3903-41f3-afcb-af62929ccde1": "Managed-CORS-CustomOrigin",
        "88a5eaf4-2fd4-4709-b370-b4c650ea3fcf": "Managed-CORS-S3Origin",
        "216adef6-5c7f-47e4-b989-5492eafa07d3": "Managed-AllViewer",
        "775133bc-15f2-49f9-abea-afb2e0bf67d2": "Managed-HostHeaderOnly",
        "33f36d7e-f396-46d9-90e0-52428a34d9dc": "Managed-UserAgentRefererHeaders",
        "b689b0a8-53d0-40ab-baf2-68738e2966ac": "Managed-AllViewerExceptHostHeader",
        "bf0718e1-ba1e-49d1-88b1-f726733018ae": "Managed-AllViewerAndCloudFrontHeaders-2022-06",
    },
    "response-headers-policy": {
        "60669652-455b-4ae9-85a4-c4c02393f86c": "Managed-SimpleCORS",
        "5cc3b908-e619-4b99-88e5-2cf7f45965bd": "Managed-CORS-With-Preflight",
        "67f7725c-6f97-4210-82d7-5512b31e9d03": "Managed-SecurityHeadersPolicy",
        "e61eb60c-9c35-4d20-a928-2b84e02af89c": "Managed-CORS-and-SecurityHeadersPolicy",
        "eaab4381-ed33-4a86-88ca-d9558dc6cd63": "Managed-CORS-with-preflight-and-SecurityHeadersPolicy",
    },
}

# path segment -> (resource element, config element, error noun)
POLICIES = {
    "cache-policy": ("CachePolicy", "CachePolicyConfig", "CachePolicy"),
    "origin-request-policy": ("OriginRequestPolicy", "OriginRequestPolicyConfig", "OriginRequestPolicy"),
    "response-headers-policy": ("ResponseHeadersPolicy", "ResponseHeadersPolicyConfig", "ResponseHeadersPolicy"),
}
# the behavior element naming each kind of policy
POLICY_FIELDS = {
    "cache-policy": "CachePolicyId",
    "origin-request-policy": "OriginRequestPolicyId",
    "response-headers-policy": "ResponseHeadersPolicyId",
}


class Refused(Exception):
    def __init__(self, status, code, message):
        super().__init__(message)
        self.status, self.code, self.message = status, code, message


LOCK = threading.RLock()


class Store:
    def __init__(self):
        self.distributions = {}  # id -> dict
        self.oacs = {}  # id -> dict
        self.oais = {}  # id -> dict
        self.functions = {}  # name -> dict
        self.policies = {kind: {} for kind in POLICIES}  # kind -> id -> dict
        self.tags = {}  # ARN -> {key: value}


STORE = Store()


def reset():
    global STORE
    with LOCK:
        STORE = Store()


# -- XML ------------------------------------------------------------------------------------

def _strip(element):
    for node in element.iter():
        if isinstance(node.tag, str) and "}" in node.tag:
            node.tag = node.tag.split("}", 1)[1]
    return element


def _parse(body):
    try:
        return _strip(ET.fromstring(body))
    except ET.ParseError as err:
        raise Refused(400, "MalformedXML", f"The XML you provided was not well-formed: {err}")


def _xml(element):
    return ET.tostring(element, encoding="unicode")


def _canonical(element):
    """The element's text with whitespace between tags dropped (AWS compares configs so)."""
    return re.sub(r">\s+<", "><", _xml(element)).strip()


def _text(element, path, default=None):
    found = element.find(path) if element is not None else None
    if found is None or found.text is None:
        return default
    return found.text.strip()


def _esc(value):
    return (str(value).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;"))


def _now():
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def _id(length=14):
    return "E" + "".join(random.choices(string.ascii_uppercase + string.digits, k=length - 1))


def _etag():
    return "E" + "".join(random.choices(string.ascii_uppercase + string.digits, k=13))


def _deploy_seconds():
    return timing.seconds("cloudfront_distribution_deploy_ms", DEPLOY_SECONDS[0])


def _check_quantities(element):
    for node in element.iter():
        quantity, items = node.find("Quantity"), node.find("Items")
        if quantity is None or quantity.text is None:
            continue
        count = len(list(items)) if items is not None else 0
        if int(quantity.text) != count:
            raise Refused(400, "InconsistentQuantities",
                          f"The value of Quantity and the size of Items don't match ({node.tag}: Quantity {quantity.text}, {count} items).")


def _if_match(environ, current, what):
    given = environ.get("HTTP_IF_MATCH")
    if not given:
        raise Refused(400, "InvalidIfMatchVersion", "The If-Match version is missing or not valid for the resource.")
    if given != current:
        raise Refused(412, "PreconditionFailed",
                      f"The If-Match version is missing or not valid for the {what}.")


# -- distributions --------------------------------------------------------------------------

def _status(dist):
    return "InProgress" if time.monotonic() < dist["deployed_at"] else "Deployed"


def _behaviors(config):
    default = config.find("DefaultCacheBehavior")
    others = config.findall("CacheBehaviors/Items/CacheBehavior")
    return ([default] if default is not None else []) + others


def _validate_distribution(config):
    for required in ("CallerReference", "Origins", "DefaultCacheBehavior", "Comment", "Enabled"):
        if config.find(required) is None:
            raise Refused(400, "MalformedInput", f"Missing required element {required} in DistributionConfig.")
    _check_quantities(config)
    origins = {_text(o, "Id") for o in config.findall("Origins/Items/Origin")}
    origins |= {_text(g, "Id") for g in config.findall("OriginGroups/Items/OriginGroup")}
    if not config.findall("Origins/Items/Origin"):
        raise Refused(400, "InvalidArgument", "The parameter Origins must contain at least one origin.")
    for origin in config.findall("Origins/Items/Origin"):
        oac = _text(origin, "OriginAccessControlId")
        if oac and oac not in STORE.oacs:
            raise Refused(404, "NoSuchOriginAccessControl", f"The specified origin access control {oac} does not exist.")
        oai = _text(origin, "S3OriginConfig/OriginAccessIdentity")
        if oai:
            oai_id = oai.rsplit("/", 1)[-1]
            if oai_id not in STORE.oais:
                raise Refused(404, "NoSuchCloudFrontOriginAccessIdentity", f"The specified origin access identity {oai} does not exist.")
    for behavior in _behaviors(config):
        if _text(behavior, "TargetOriginId") not in origins:
            raise Refused(404, "NoSuchOrigin", "One or more of your origins or origin groups do not exist.")
        if not _text(behavior, "CachePolicyId") and behavior.find("ForwardedValues") is None:
            raise Refused(400, "InvalidArgument", "The parameter ForwardedValues is required.")
        for kind, field in POLICY_FIELDS.items():
            policy = _text(behavior, field)
            if policy and policy not in STORE.policies[kind] and policy not in MANAGED[kind]:
                noun = POLICIES[kind][2]
                raise Refused(404, f"NoSuch{noun}", f"The {noun} {policy} does not exist.")
        for association in behavior.findall("FunctionAssociations/Items/FunctionAssociation"):
            arn = _text(association, "FunctionARN") or ""
            name = arn.rsplit("function/", 1)[-1]
            function = STORE.functions.get(name)
            if function is None or function["live"] is None or function["arn"] != arn:
                raise Refused(400, "InvalidFunctionAssociation",
                              f"The function ARN {arn} is not valid: it must name a function published to the LIVE stage.")


def _distribution_xml(dist, root="Distribution"):
    config = dist["config"]
    return (f'<{root} xmlns="{NS}"><Id>{dist["id"]}</Id><ARN>{dist["arn"]}</ARN>'
            f'<Status>{_status(dist)}</Status><LastModifiedTime>{dist["modified"]}</LastModifiedTime>'
            f'<InProgressInvalidationBatches>0</InProgressInvalidationBatches>'
            f'<DomainName>{dist["domain"]}</DomainName>'
            f'<ActiveTrustedSigners><Enabled>false</Enabled><Quantity>0</Quantity></ActiveTrustedSigners>'
            f'<ActiveTrustedKeyGroups><Enabled>false</Enabled><Quantity>0</Quantity></ActiveTrustedKeyGroups>'
            f'{_xml(config)}</{root}>')


def _summary_xml(dist):
    config = dist["config"]
    parts = "".join(_xml(config.find(tag)) for tag in (
        "Aliases", "Origins", "OriginGroups", "DefaultCacheBehavior", "CacheBehaviors",
        "CustomErrorResponses", "Comment", "PriceClass", "Enabled", "ViewerCertificate",
        "Restrictions", "WebACLId", "HttpVersion", "IsIPV6Enabled") if config.find(tag) is not None)
    return (f'<DistributionSummary><Id>{dist["id"]}</Id><ARN>{dist["arn"]}</ARN>'
            f'<ETag>{dist["etag"]}</ETag><Status>{_status(dist)}</Status>'
            f'<LastModifiedTime>{dist["modified"]}</LastModifiedTime><DomainName>{dist["domain"]}</DomainName>'
            f'{parts}<Staging>false</Staging></DistributionSummary>')


def _create_distribution(environ, body, query):
    root = _parse(body)
    if root.tag == "DistributionConfigWithTags":
        config, tags = root.find("DistributionConfig"), root.find("Tags")
    else:
        config, tags = root, None
    if config is None:
        raise Refused(400, "MalformedInput", "Missing DistributionConfig.")
    reference = _text(config, "CallerReference")
    existing = next((d for d in STORE.distributions.values() if _text(d["config"], "CallerReference") == reference), None)
    if existing is not None:
        if _canonical(existing["config"]) == _canonical(config):
            return 201, {"ETag": existing["etag"], "Location": _location(existing)}, _distribution_xml(existing)
        raise Refused(409, "DistributionAlreadyExists",
                      f"The caller reference that you are using to create a distribution is associated with another distribution. Already exists: {existing['id']}")
    _validate_distribution(config)
    dist_id = _id()
    dist = {"id": dist_id, "arn": f"arn:aws:cloudfront::{ACCOUNT}:distribution/{dist_id}",
            "domain": f"d{uuid.uuid4().hex[:13]}.cloudfront.net", "config": config, "etag": _etag(),
            "modified": _now(), "deployed_at": time.monotonic() + _deploy_seconds()}
    STORE.distributions[dist_id] = dist
    STORE.tags[dist["arn"]] = {_text(t, "Key"): _text(t, "Value", "") for t in (tags.findall("Items/Tag") if tags is not None else [])}
    return 201, {"ETag": dist["etag"], "Location": _location(dist)}, _distribution_xml(dist)


def _location(dist):
    return f"https://cloudfront.amazonaws.com{PREFIX}/distribution/{dist['id']}"


def _distribution(dist_id):
    dist = STORE.distributions.get(dist_id)
    if dist is None:
        raise Refused(404, "NoSuchDistribution", "The specified distribution does not exist.")
    return dist


def _update_distribution(environ, body, dist_id):
    dist = _distribution(dist_id)
    _if_match(environ, dist["etag"], "distribution")
    config = _parse(body)
    if _text(config, "CallerReference") != _text(dist["config"], "CallerReference"):
        raise Refused(400, "IllegalUpdate", "The update contains modifications that are not allowed: CallerReference cannot change.")
    _validate_distribution(config)
    dist.update(config=config, etag=_etag(), modified=_now(), deployed_at=time.monotonic() + _deploy_seconds())
    return 200, {"ETag": dist["etag"]}, _distribution_xml(dist)


def _delete_distribution(environ, dist_id):
    dist = _distribution(dist_id)
    _if_match(environ, dist["etag"], "distribution")
    if _text(dist["config"], "Enabled") == "true" or _status(dist) != "Deployed":
        raise Refused(409, "DistributionNotDisabled", "The distribution you are trying to delete has not been disabled.")
    del STORE.distributions[dist_id]
    STORE.tags.pop(dist["arn"], None)
    return 204, {}, ""


def _list_distributions():
    items = "".join(_summary_xml(d) for d in STORE.distributions.values())
    return 200, {}, (f'<DistributionList xmlns="{NS}"><Marker></Marker><MaxItems>100</MaxItems>'
                     f'<IsTruncated>false</IsTruncated><Quantity>{len(STORE.distributions)}</Quantity>'
                     f'<Items>{items}</Items></DistributionList>')


def _uses(predicate):
    """Whether any distribution's config satisfies `predicate`."""
    return any(predicate(d["config"]) for d in STORE.distributions.values())


# -- tags -----------------------------------------------------------------------------------

def _tagging(environ, body, query):
    arn = query.get("Resource", [""])[0]
    if arn not in STORE.tags:
        raise Refused(404, "NoSuchResource", f"The specified resource {arn} does not exist.")
    operation = query.get("Operation", [""])[0]
    if environ["REQUEST_METHOD"] == "GET":
        items = "".join(f"<Tag><Key>{_esc(k)}</Key><Value>{_esc(v)}</Value></Tag>" for k, v in sorted(STORE.tags[arn].items()))
        return 200, {}, f'<Tags xmlns="{NS}"><Items>{items}</Items></Tags>'
    root = _parse(body)
    if operation == "Tag":
        for tag in root.findall("Items/Tag"):
            STORE.tags[arn][_text(tag, "Key")] = _text(tag, "Value", "")
    elif operation == "Untag":
        for key in root.findall("Items/Key"):
            STORE.tags[arn].pop((key.text or "").strip(), None)
    return 204, {}, ""


# -- origin access controls and identities --------------------------------------------------

def _oac_xml(oac):
    return f'<OriginAccessControl xmlns="{NS}"><Id>{oac["id"]}</Id>{_xml(oac["config"])}</OriginAccessControl>'


def _oac(oac_id):
    oac = STORE.oacs.get(oac_id)
    if oac is None:
        raise Refused(404, "NoSuchOriginAccessControl", "The origin access control does not exist.")
    return oac


def _origin_access_control(environ, body, rest):
    method = environ["REQUEST_METHOD"]
    if not rest:
        if method == "POST":
            config = _parse(body)
            name = _text(config, "Name")
            if any(_text(o["config"], "Name") == name for o in STORE.oacs.values()):
                raise Refused(409, "OriginAccessControlAlreadyExists", f"An origin access control with the name {name} already exists.")
            oac = {"id": _id(), "config": config, "etag": _etag()}
            STORE.oacs[oac["id"]] = oac
            return 201, {"ETag": oac["etag"], "Location": f"https://cloudfront.amazonaws.com{PREFIX}/origin-access-control/{oac['id']}"}, _oac_xml(oac)
        items = "".join(
            f'<OriginAccessControlSummary><Id>{o["id"]}</Id><Description>{_esc(_text(o["config"], "Description", ""))}</Description>'
            f'<Name>{_esc(_text(o["config"], "Name"))}</Name><SigningProtocol>{_text(o["config"], "SigningProtocol")}</SigningProtocol>'
            f'<SigningBehavior>{_text(o["config"], "SigningBehavior")}</SigningBehavior>'
            f'<OriginAccessControlOriginType>{_text(o["config"], "OriginAccessControlOriginType")}</OriginAccessControlOriginType></OriginAccessControlSummary>'
            for o in STORE.oacs.values())
        return 200, {}, (f'<OriginAccessControlList xmlns="{NS}"><Marker></Marker><MaxItems>100</MaxItems><IsTruncated>false</IsTruncated>'
                         f'<Quantity>{len(STORE.oacs)}</Quantity><Items>{items}</Items></OriginAccessControlList>')
    oac_id, _, sub = rest.partition("/")
    oac = _oac(oac_id)
    if method == "GET" and sub == "config":
        return 200, {"ETag": oac["etag"]}, _xml_ns(oac["config"])
    if method == "GET":
        return 200, {"ETag": oac["etag"]}, _oac_xml(oac)
    if method == "PUT":
        _if_match(environ, oac["etag"], "origin access control")
        oac.update(config=_parse(body), etag=_etag())
        return 200, {"ETag": oac["etag"]}, _oac_xml(oac)
    if method == "DELETE":
        _if_match(environ, oac["etag"], "origin access control")
        if _uses(lambda c: any(_text(o, "OriginAccessControlId") == oac_id for o in c.findall("Origins/Items/Origin"))):
            raise Refused(409, "OriginAccessControlInUse", "Cannot delete the origin access control because it's in use by one or more distributions.")
        del STORE.oacs[oac_id]
        return 204, {}, ""
    return None


def _xml_ns(element):
    """A stored element as a response root, with CloudFront's namespace."""
    copy = ET.fromstring(_xml(element))
    copy.set("xmlns", NS)
    return _xml(copy)


def _oai_xml(oai):
    return (f'<CloudFrontOriginAccessIdentity xmlns="{NS}"><Id>{oai["id"]}</Id>'
            f'<S3CanonicalUserId>{oai["canonical"]}</S3CanonicalUserId>{_xml(oai["config"])}</CloudFrontOriginAccessIdentity>')


def _origin_access_identity(environ, body, rest):
    method = environ["REQUEST_METHOD"]
    if not rest:
        if method == "POST":
            config = _parse(body)
            reference = _text(config, "CallerReference")
            existing = next((o for o in STORE.oais.values() if _text(o["config"], "CallerReference") == reference), None)
            if existing is not None:
                if _canonical(existing["config"]) == _canonical(config):
                    return 201, {"ETag": existing["etag"]}, _oai_xml(existing)
                raise Refused(409, "CloudFrontOriginAccessIdentityAlreadyExists",
                              "If the CallerReference is a value you already sent in a previous request to create an identity but the content of the CloudFrontOriginAccessIdentityConfig is different from the original request, CloudFront returns a CloudFrontOriginAccessIdentityAlreadyExists error.")
            oai = {"id": _id(), "config": config, "etag": _etag(), "canonical": uuid.uuid4().hex + uuid.uuid4().hex}
            STORE.oais[oai["id"]] = oai
            return 201, {"ETag": oai["etag"], "Location": f"https://cloudfront.amazonaws.com{PREFIX}/origin-access-identity/cloudfront/{oai['id']}"}, _oai_xml(oai)
        items = "".join(
            f'<CloudFrontOriginAccessIdentitySummary><Id>{o["id"]}</Id><S3CanonicalUserId>{o["canonical"]}</S3CanonicalUserId>'
            f'<Comment>{_esc(_text(o["config"], "Comment", ""))}</Comment></CloudFrontOriginAccessIdentitySummary>'
            for o in STORE.oais.values())
        return 200, {}, (f'<CloudFrontOriginAccessIdentityList xmlns="{NS}"><Marker></Marker><MaxItems>100</MaxItems><IsTruncated>false</IsTruncated>'
                         f'<Quantity>{len(STORE.oais)}</Quantity><Items>{items}</Items></CloudFrontOriginAccessIdentityList>')
    oai_id, _, sub = rest.partition("/")
    oai = STORE.oais.get(oai_id)
    if oai is None:
        raise Refused(404, "NoSuchCloudFrontOriginAccessIdentity", "The specified origin access identity does not exist.")
    if method == "GET" and sub == "config":
        return 200, {"ETag": oai["etag"]}, _xml_ns(oai["config"])
    if method == "GET":
        return 200, {"ETag": oai["etag"]}, _oai_xml(oai)
    if method == "PUT":
        _if_match(environ, oai["etag"], "origin access identity")
        config = _parse(body)
        if _text(config, "CallerReference") != _text(oai["config"], "CallerReference"):
            raise Refused(400, "IllegalUpdate", "Origin access identity's CallerReference cannot change.")
        oai.update(config=config, etag=_etag())
        return 200, {"ETag": oai["etag"]}, _oai_xml(oai)
    if method == "DELETE":
        _if_match(environ, oai["etag"], "origin access identity")
        if _uses(lambda c: any((_text(o, "S3OriginConfig/OriginAccessIdentity") or "").endswith("/" + oai_id)
                               for o in c.findall("Origins/Items/Origin"))):
            raise Refused(409, "CloudFrontOriginAccessIdentityInUse", "The Origin Access Identity specified is already in use.")
        del STORE.oais[oai_id]
        return 204, {}, ""
    return None


# -- policies -------------------------------------------------------------------------------

def _policy_xml(kind, policy, with_ns=True):
    element, config_tag, _ = POLICIES[kind]
    ns = f' xmlns="{NS}"' if with_ns else ""
    return (f'<{element}{ns}><Id>{policy["id"]}</Id><LastModifiedTime>{policy["modified"]}</LastModifiedTime>'
            f'{_xml(policy["config"])}</{element}>')


def _managed(kind, policy_id):
    name = MANAGED[kind][policy_id]
    config_tag = POLICIES[kind][1]
    return {"id": policy_id, "modified": "2020-06-01T00:00:00.000Z", "etag": "E23ZP02F085DFQ",
            "config": ET.fromstring(f"<{config_tag}><Name>{name}</Name><Comment>AWS managed policy</Comment></{config_tag}>")}


def _policy(environ, body, kind, rest, query):
    element, config_tag, noun = POLICIES[kind]
    policies = STORE.policies[kind]
    method = environ["REQUEST_METHOD"]
    if not rest:
        if method == "POST":
            config = _parse(body)
            _check_quantities(config)
            name = _text(config, "Name")
            if any(_text(p["config"], "Name") == name for p in policies.values()):
                raise Refused(409, f"{noun}AlreadyExists", f"A {noun} with this name already exists.")
            policy = {"id": str(uuid.uuid4()), "config": config, "etag": _etag(), "modified": _now()}
            policies[policy["id"]] = policy
            return 201, {"ETag": policy["etag"], "Location": f"https://cloudfront.amazonaws.com{PREFIX}/{kind}/{policy['id']}"}, _policy_xml(kind, policy)
        wanted = query.get("Type", [""])[0]
        listed = []
        if wanted in ("", "custom"):
            listed += [("custom", p) for p in policies.values()]
        if wanted in ("", "managed"):
            listed += [("managed", _managed(kind, i)) for i in MANAGED[kind]]
        items = "".join(f"<{noun}Summary><Type>{t}</Type>{_policy_xml(kind, p, False)}</{noun}Summary>" for t, p in listed)
        return 200, {}, (f'<{noun}List xmlns="{NS}"><MaxItems>100</MaxItems><Quantity>{len(listed)}</Quantity>'
                         f'<Items>{items}</Items></{noun}List>')
    policy_id, _, sub = rest.partition("/")
    if policy_id in MANAGED[kind] and method == "GET":
        policy = _managed(kind, policy_id)
    else:
        policy = policies.get(policy_id)
    if policy is None:
        raise Refused(404, f"NoSuch{noun}", f"The {noun} does not exist.")
    if method == "GET" and sub == "config":
        return 200, {"ETag": policy["etag"]}, _xml_ns(policy["config"])
    if method == "GET":
        return 200, {"ETag": policy["etag"]}, _policy_xml(kind, policy)
    if method == "PUT":
        _if_match(environ, policy["etag"], noun)
        config = _parse(body)
        _check_quantities(config)
        name = _text(config, "Name")
        if any(_text(p["config"], "Name") == name and i != policy_id for i, p in policies.items()):
            raise Refused(409, f"{noun}AlreadyExists", f"A {noun} with this name already exists.")
        policy.update(config=config, etag=_etag(), modified=_now())
        return 200, {"ETag": policy["etag"]}, _policy_xml(kind, policy)
    if method == "DELETE":
        _if_match(environ, policy["etag"], noun)
        field = POLICY_FIELDS[kind]
        if _uses(lambda c: any(_text(b, field) == policy_id for b in _behaviors(c))):
            raise Refused(409, f"{noun}InUse", f"Cannot delete the {noun} because it is attached to one or more cache behaviors.")
        del policies[policy_id]
        return 204, {}, ""
    return None


# -- functions ------------------------------------------------------------------------------

def _function_summary(function, stage):
    copy = function["live"] if stage == "LIVE" else function["dev"]
    status = ("ASSOCIATED" if _function_used(function) else "UNASSOCIATED") if stage == "LIVE" else "UNPUBLISHED"
    return (f'<FunctionSummary xmlns="{NS}"><Name>{_esc(function["name"])}</Name><Status>{status}</Status>'
            f'{_xml(copy["config"])}<FunctionMetadata><FunctionARN>{function["arn"]}</FunctionARN>'
            f'<Stage>{stage}</Stage><CreatedTime>{function["created"]}</CreatedTime>'
            f'<LastModifiedTime>{copy["modified"]}</LastModifiedTime></FunctionMetadata></FunctionSummary>')


def _function_used(function):
    return _uses(lambda c: any(_text(a, "FunctionARN") == function["arn"]
                               for b in _behaviors(c) for a in b.findall("FunctionAssociations/Items/FunctionAssociation")))


def _code(element):
    try:
        return base64.b64decode(_text(element, "FunctionCode", ""))
    except ValueError:
        raise Refused(400, "InvalidArgument", "FunctionCode is not base64.")


def _functions(environ, body, rest, query):
    method = environ["REQUEST_METHOD"]
    stage = query.get("Stage", ["DEVELOPMENT"])[0]
    if not rest:
        if method == "POST":
            request = _parse(body)
            name = _text(request, "Name")
            if name in STORE.functions:
                raise Refused(409, "FunctionAlreadyExists", f"A function with the same name already exists: {name}")
            now = _now()
            function = {"name": name, "arn": f"arn:aws:cloudfront::{ACCOUNT}:function/{name}", "created": now, "live": None,
                        "dev": {"config": request.find("FunctionConfig"), "code": _code(request), "etag": _etag(), "modified": now}}
            STORE.functions[name] = function
            STORE.tags[function["arn"]] = {_text(t, "Key"): _text(t, "Value", "") for t in request.findall("Tags/Items/Tag")}
            return 201, {"ETag": function["dev"]["etag"], "Location": f"https://cloudfront.amazonaws.com{PREFIX}/function/{function['arn']}"}, _function_summary(function, "DEVELOPMENT")
        listed = [f for f in STORE.functions.values() if stage != "LIVE" or f["live"] is not None]
        items = "".join(_function_summary(f, stage).replace(f' xmlns="{NS}"', "") for f in listed)
        return 200, {}, f'<FunctionList xmlns="{NS}"><MaxItems>100</MaxItems><Quantity>{len(listed)}</Quantity><Items>{items}</Items></FunctionList>'
    name, _, sub = rest.partition("/")
    name = unquote(name)
    function = STORE.functions.get(name)
    if function is None or (method == "GET" and stage == "LIVE" and function["live"] is None):
        raise Refused(404, "NoSuchFunctionExists", f"The function does not exist: {name}")
    copy = function["live"] if stage == "LIVE" else function["dev"]
    if method == "GET" and sub == "describe":
        return 200, {"ETag": copy["etag"]}, _function_summary(function, stage)
    if method == "GET" and not sub:
        return 200, {"ETag": copy["etag"], "Content-Type": "application/octet-stream"}, copy["code"]
    if method == "PUT" and not sub:
        _if_match(environ, function["dev"]["etag"], "function")
        request = _parse(body)
        function["dev"] = {"config": request.find("FunctionConfig"), "code": _code(request), "etag": _etag(), "modified": _now()}
        return 200, {"ETtag": function["dev"]["etag"]}, _function_summary(function, "DEVELOPMENT")
    if method == "POST" and sub == "publish":
        _if_match(environ, function["dev"]["etag"], "function")
        function["live"] = dict(function["dev"], etag=_etag(), modified=_now())
        return 200, {}, _function_summary(function, "LIVE")
    if method == "DELETE" and not sub:
        _if_match(environ, function["dev"]["etag"], "function")
        if _function_used(function):
            raise Refused(409, "FunctionInUse", "Cannot delete function, it's in use by one or more distributions.")
        del STORE.functions[name]
        STORE.tags.pop(function["arn"], None)
        return 204, {}, ""
    return None


# -- routing --------------------------------------------------------------------------------

def _route(environ, body):
    path = environ.get("PATH_INFO", "")[len(PREFIX):]
    query = parse_qs(environ.get("QUERY_STRING", ""), keep_blank_values=True)
    method = environ["REQUEST_METHOD"]
    segments = path.strip("/").split("/", 1)
    head, rest = segments[0], (segments[1] if len(segments) > 1 else "")
    with LOCK:
        if head == "distribution":
            if not rest:
                return _create_distribution(environ, body, query) if method == "POST" else _list_distributions()
            dist_id, _, sub = rest.partition("/")
            if method == "GET" and sub == "config":
                dist = _distribution(dist_id)
                return 200, {"ETag": dist["etag"]}, _xml_ns(dist["config"])
            if method == "GET" and not sub:
                dist = _distribution(dist_id)
                return 200, {"ETag": dist["etag"]}, _distribution_xml(dist)
            if method == "PUT" and sub == "config":
                return _update_distribution(environ, body, dist_id)
            if method == "DELETE" and not sub:
                return _delete_distribution(environ, dist_id)
            return None
        if head == "tagging":
            return _tagging(environ, body, query)
        if head == "origin-access-control":
            return _origin_access_control(environ, body, rest)
        if head == "origin-access-identity":
            return _origin_access_identity(environ, body, rest[len("cloudfront"):].lstrip("/"))
        if head in POLICIES:
            return _policy(environ, body, head, rest, query)
        if head == "function":
            return _functions(environ, body, rest, query)
    return None


def _is_cloudfront(environ):
    return ("/cloudfront/aws4_request" in environ.get("HTTP_AUTHORIZATION", "")
            and environ.get("PATH_INFO", "").startswith(PREFIX + "/"))


def answer(environ, start_response):
    """CloudFront's answer to the request, or None for a request left to moto (key groups,
    public keys, invalidations, key value stores)."""
    length = int(environ.get("CONTENT_LENGTH") or 0)
    body = environ["wsgi.input"].read(length) if length else b""
    import io
    environ["wsgi.input"] = io.BytesIO(body)
    try:
        answered = _route(environ, body)
    except Refused as err:
        answered = (err.status, {}, (f'<ErrorResponse xmlns="{NS}"><Error><Type>Sender</Type><Code>{err.code}</Code>'
                                    f'<Message>{_esc(err.message)}</Message></Error><RequestId>{uuid.uuid4()}</RequestId></ErrorResponse>'))
    if answered is None:
        return None
    status, headers, payload = answered
    data = payload if isinstance(payload, bytes) else (
        ('<?xml version="1.0" encoding="UTF-8"?>' + payload).encode() if payload else b"")
    reasons = {200: "OK", 201: "Created", 204: "No Content", 400: "Bad Request", 404: "Not Found",
               409: "Conflict", 412: "Precondition Failed"}
    all_headers = [("Content-Type", headers.pop("Content-Type", "text/xml")), ("Content-Length", str(len(data))),
                   ("x-amz-request-id", str(uuid.uuid4()))] + list(headers.items())
    start_response(f"{status} {reasons.get(status, 'OK')}", all_headers)
    return [data]


def _control(environ, start_response):
    length = int(environ.get("CONTENT_LENGTH") or 0)
    body = json.loads(environ["wsgi.input"].read(length) or b"{}") if length else {}
    if "deploySeconds" in body:
        DEPLOY_SECONDS[0] = float(body["deploySeconds"])
        # What is in progress takes no longer than the new time from now.
        latest = time.monotonic() + DEPLOY_SECONDS[0]
        with LOCK:
            for dist in STORE.distributions.values():
                dist["deployed_at"] = min(dist["deployed_at"], latest)
    data = json.dumps({"deploySeconds": DEPLOY_SECONDS[0]}).encode()
    start_response("200 OK", [("Content-Type", "application/json"), ("Content-Length", str(len(data)))])
    return [data]


def install():
    """Answers CloudFront before moto's dispatcher does (idempotent)."""
    from moto.moto_server.werkzeug_app import DomainDispatcherApplication
    if getattr(DomainDispatcherApplication, "_cloudfront_service", False):
        return
    moto_call = DomainDispatcherApplication.__call__

    def call(self, environ, start_response):
        path = environ.get("PATH_INFO", "")
        if path == "/moto-api/cloudfront":
            return _control(environ, start_response)
        if path == "/moto-api/reset" and environ.get("REQUEST_METHOD") == "POST":
            reset()
        elif _is_cloudfront(environ):
            answered = answer(environ, start_response)
            if answered is not None:
                return answered
        return moto_call(self, environ, start_response)

    DomainDispatcherApplication.__call__ = call
    DomainDispatcherApplication._cloudfront_service = True


install()
