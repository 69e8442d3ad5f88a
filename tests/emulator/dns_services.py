"""Route 53 and ACM made AWS-like where cheap.

CreateHostedZone with a CallerReference used before: AWS answers HostedZoneAlreadyExists (the
reference is its idempotency token), moto made a second zone.

ListQueryLoggingConfigs with a HostedZoneId: moto compares the bare id with its own
`/hostedzone/`-less ids wrongly (always NoSuchHostedZone) and would list every zone's
configurations; here it answers the zone's own, as AWS does.

ACM DNS validation: moto issues an Amazon certificate 60 s after the
request whatever DNS holds (MOTO_ACM_VALIDATION_WAIT). Here a certificate pending DNS
validation is ISSUED as soon as every domain's validation CNAME (the name and value ACM's
DescribeCertificate gives) is in a Route 53 hosted zone of the account, and stays
PENDING_VALIDATION until then (moto's timer is pushed out to an hour). Differences from AWS
are listed in docs/testing.md."""

from moto.acm import models as acm_models  # noqa: E402
from moto.route53.models import route53_backends  # noqa: E402
from moto import settings as moto_settings  # noqa: E402

# moto's timer, read on every check: an hour, unless the environment sets it.
if "MOTO_ACM_VALIDATION_WAIT" not in __import__("os").environ:
    moto_settings.ACM_VALIDATION_WAIT = 3600

_moto_check = acm_models.CertBundle.check


def _cname_exists(account_id, name, value):
    backend = route53_backends[account_id]["global"]
    wanted = (name.rstrip(".").lower(), value.rstrip(".").lower())
    for zone in backend.zones.values():
        for record in zone.rrsets:
            if record.type != "CNAME" or record.name.rstrip(".").lower() != wanted[0]:
                continue
            if any(str(v).rstrip(".").lower() == wanted[1] for v in record.records):
                return True
    return False


def _check(self):
    _moto_check(self)
    if self.type != "AMAZON_ISSUED" or self.status != "PENDING_VALIDATION":
        return
    details = self.describe()["Certificate"].get("DomainValidationOptions", [])
    if details and all(
        _cname_exists(self.arn.split(":")[4], d["ResourceRecord"]["Name"], d["ResourceRecord"]["Value"])
        for d in details
    ):
        self.status = "ISSUED"


acm_models.CertBundle.check = _check


_r53_backend = __import__("moto.route53.models", fromlist=["Route53Backend"]).Route53Backend


def list_query_logging_configs(self, hosted_zone_id=None, **_paging):
    configs = list(self.query_logging_configs.values())
    if not hosted_zone_id:
        return configs
    zone_id = hosted_zone_id.split("/")[-1]
    if not any(z.id.split("/")[-1] == zone_id for z in self.zones.values()):
        from moto.route53.exceptions import NoSuchHostedZone

        raise NoSuchHostedZone(zone_id)
    return [c for c in configs if str(c.hosted_zone_id).split("/")[-1] == zone_id]


from moto.route53.utils import PAGINATION_MODEL  # noqa: E402
from moto.utilities.paginator import paginate  # noqa: E402

_r53_backend.list_query_logging_configs = paginate(pagination_model=PAGINATION_MODEL)(
    list_query_logging_configs
)


_moto_create_hosted_zone = _r53_backend.create_hosted_zone


def _create_hosted_zone(self, name, private_zone, caller_reference=None, *args, **kwargs):
    if caller_reference and any(
        getattr(z, "caller_reference", None) == caller_reference for z in self.zones.values()
    ):
        from moto.route53.exceptions import Route53ClientError

        raise Route53ClientError(
            "HostedZoneAlreadyExists",
            f"A hosted zone has already been created with the specified caller reference {caller_reference}.",
        )
    return _moto_create_hosted_zone(self, name, private_zone, caller_reference, *args, **kwargs)


_r53_backend.create_hosted_zone = _create_hosted_zone
