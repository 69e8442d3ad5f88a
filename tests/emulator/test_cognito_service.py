"""Cognito user pool domains as AWS has them (cognito_service.py), through the running emulator."""

import pytest


def _pool(idp, name):
    return idp.create_user_pool(PoolName=name)["UserPool"]["Id"]


def test_a_domain_in_use_is_refused(emulator):
    idp = emulator.client("cognito-idp")
    first, second = _pool(idp, "one"), _pool(idp, "two")
    idp.create_user_pool_domain(Domain="taken-prefix", UserPoolId=first)
    with pytest.raises(idp.exceptions.InvalidParameterException):
        idp.create_user_pool_domain(Domain="taken-prefix", UserPoolId=second)
    assert idp.describe_user_pool_domain(Domain="taken-prefix")["DomainDescription"]["UserPoolId"] == first
    idp.delete_user_pool_domain(Domain="taken-prefix", UserPoolId=first)


def test_a_second_prefix_domain_on_a_pool_is_refused(emulator):
    idp = emulator.client("cognito-idp")
    pool = _pool(idp, "three")
    idp.create_user_pool_domain(Domain="first-prefix", UserPoolId=pool)
    with pytest.raises(idp.exceptions.InvalidParameterException):
        idp.create_user_pool_domain(Domain="second-prefix", UserPoolId=pool)
    idp.delete_user_pool_domain(Domain="first-prefix", UserPoolId=pool)
    idp.create_user_pool_domain(Domain="second-prefix", UserPoolId=pool)
    idp.delete_user_pool_domain(Domain="second-prefix", UserPoolId=pool)


def test_a_domain_of_another_pool_is_not_deleted(emulator):
    idp = emulator.client("cognito-idp")
    owner, other = _pool(idp, "four"), _pool(idp, "five")
    idp.create_user_pool_domain(Domain="owned-prefix", UserPoolId=owner)
    with pytest.raises(idp.exceptions.InvalidParameterException):
        idp.delete_user_pool_domain(Domain="owned-prefix", UserPoolId=other)
    idp.delete_user_pool_domain(Domain="owned-prefix", UserPoolId=owner)
    assert idp.describe_user_pool_domain(Domain="owned-prefix")["DomainDescription"] == {}
