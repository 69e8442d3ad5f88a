"""Cognito user pool domains made as strict as AWS where cdkd's cognito plugin depends on it.

- A domain already in use (by any pool) is refused with InvalidParameterException, as on AWS;
  moto accepted it and moved the domain to the second pool.
- A pool has at most one Cognito-prefix domain and one custom domain: a second one of a kind is
  refused with InvalidParameterException; moto accepted any number.
- Deleting a domain names its pool: a domain of another pool is refused with
  InvalidParameterException; moto deleted it whatever the pool.

Remaining differences are listed in docs/testing.md."""

from moto.cognitoidp import models as cognitoidp_models
from moto.cognitoidp.exceptions import InvalidParameterException

_Backend = cognitoidp_models.CognitoIdpBackend
_create_domain = _Backend.create_user_pool_domain
_delete_domain = _Backend.delete_user_pool_domain


def _is_custom(domain_object):
    return bool(getattr(domain_object, "custom_domain_config", None))


def create_user_pool_domain(self, user_pool_id, domain, custom_domain_config=None):
    if domain in self.user_pool_domains:
        raise InvalidParameterException("Domain already associated with another user pool.")
    custom = bool(custom_domain_config)
    for existing in self.user_pool_domains.values():
        if existing.user_pool_id == user_pool_id and _is_custom(existing) == custom:
            raise InvalidParameterException(
                "User pool already has a domain configured." if not custom
                else "User pool already has a custom domain configured."
            )
    return _create_domain(self, user_pool_id, domain, custom_domain_config=custom_domain_config)


def delete_user_pool_domain(self, domain, user_pool_id=None):
    existing = self.user_pool_domains.get(domain)
    if existing is not None and user_pool_id and existing.user_pool_id != user_pool_id:
        raise InvalidParameterException(f"Domain {domain} is not a domain of user pool {user_pool_id}.")
    return _delete_domain(self, domain)


_Backend.create_user_pool_domain = create_user_pool_domain
_Backend.delete_user_pool_domain = delete_user_pool_domain

# The response handler calls the backend without the pool: pass it through.
from moto.cognitoidp import responses as cognitoidp_responses  # noqa: E402

_Responses = cognitoidp_responses.CognitoIdpResponse


def _delete_user_pool_domain_response(self):
    self.backend.delete_user_pool_domain(
        self._get_param("Domain"), user_pool_id=self._get_param("UserPoolId")
    )
    return cognitoidp_responses.EmptyResult()


_Responses.delete_user_pool_domain = _delete_user_pool_domain_response
