"""WAFv2 made as strict as AWS where cdkd's wafv2 plugin depends on it.

- UpdateWebACL replaces the web ACL's settings: a member the request leaves out (rules,
  description, custom response bodies, captcha/challenge config, token domains, association
  config) is removed, as on AWS; moto kept the old value of every member left out (and of an
  empty rule list), so an update removing a rule or a description looked done and was not.
- DeleteWebACL of a web ACL still associated with a resource is refused with
  WAFAssociatedItemException; moto deleted it and left the association dangling.
- AssociateWebACL on a resource that already has a web ACL moves the resource to the new one
  (a resource has at most one web ACL); moto listed the resource under both and appended it
  again on every repeated association.
- A duplicate web ACL name answers AWS's code WAFDuplicateItemException (moto's was
  WafV2DuplicateItem, which no SDK knows).

Remaining differences are listed in docs/testing.md."""

from moto.wafv2 import exceptions as _exceptions
from moto.wafv2 import models as _models


class WAFAssociatedItemException(_exceptions.WAFv2ClientError):
    """AWS's refusal to delete a web ACL that still protects a resource."""

    def __init__(self) -> None:
        super().__init__(
            "WAFAssociatedItemException",
            "AWS WAF couldn’t perform the operation because your resource is being used by another resource or it’s associated with another resource.",
        )


class WAFDuplicateItemException(_exceptions.WAFv2ClientError):
    """AWS's code for a name already taken in the scope."""

    def __init__(self) -> None:
        super().__init__(
            "WAFDuplicateItemException",
            "AWS WAF could not perform the operation because some resource in your request is a duplicate of an existing one.",
        )


def _replacing_update(
    self,
    default_action,
    rules,
    description,
    visibility_config,
    custom_response_bodies,
    captcha_config,
    challenge_config,
    token_domains,
    association_config,
):
    # DefaultAction and VisibilityConfig are required members: AWS refuses a request without
    # them before it changes anything.
    if default_action is None or visibility_config is None:
        raise _exceptions.WAFv2ClientError(
            "WAFInvalidParameterException",
            "Error reason: A required field is missing, field: DefaultAction/VisibilityConfig",
        )
    self.default_action = default_action
    self.rules = rules or []
    self.description = description or ""
    self.visibility_config = visibility_config
    self.custom_response_bodies = custom_response_bodies
    self.captcha_config = captcha_config
    self.challenge_config = challenge_config
    self.token_domains = token_domains
    self.association_config = association_config
    self.lock_token = self._generate_lock_token()


_models.FakeWebACL.update = _replacing_update

_moto_delete_web_acl = _models.WAFV2Backend.delete_web_acl


def _delete_web_acl(self, name, scope, _id, lock_token):
    arn = _models.make_arn_for_wacl(
        name=name, account_id=self.account_id, region_name=self.region_name, _id=_id, scope=scope
    )
    wacl = self.wacls.get(arn)
    if wacl is not None and wacl.lock_token == lock_token and wacl.associated_resources:
        raise WAFAssociatedItemException()
    return _moto_delete_web_acl(self, name, scope, _id, lock_token)


_models.WAFV2Backend.delete_web_acl = _delete_web_acl

_moto_associate_web_acl = _models.WAFV2Backend.associate_web_acl


def _associate_web_acl(self, web_acl_arn, resource_arn):
    if web_acl_arn not in self.wacls:
        raise _exceptions.WAFNonexistentItemException()
    for wacl in self.wacls.values():
        while resource_arn in wacl.associated_resources:
            wacl.associated_resources.remove(resource_arn)
    return _moto_associate_web_acl(self, web_acl_arn, resource_arn)


_models.WAFV2Backend.associate_web_acl = _associate_web_acl

_moto_create_web_acl = _models.WAFV2Backend.create_web_acl


def _create_web_acl(self, *args, **kwargs):
    try:
        return _moto_create_web_acl(self, *args, **kwargs)
    except _exceptions.WAFV2DuplicateItemException:
        raise WAFDuplicateItemException() from None


_models.WAFV2Backend.create_web_acl = _create_web_acl
