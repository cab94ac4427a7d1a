"""Users per role and a small credited book for the page tests."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.test import Client

from books.models import Source
from books.services.accounts import credit_create
from books.services.crediting import credit_valuation_date
from core.roles import Role
from tests.factories import FundFactory, ParticipationFactory, PersonFactory, price
from tests.signin import sign_in

JAN15, JAN16 = dt.date(2026, 1, 15), dt.date(2026, 1, 16)
STAFF_ROLES = (Role.COMMITTEE, Role.ADMINISTRATOR, Role.AUDITOR)


@pytest.fixture(autouse=True)
def _fast_passwords(settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


def make_user(username: str, role: Role | None, person=None):
    user = get_user_model().objects.create_user(username=username, password="not-used-in-tests")
    if role is not None:
        user.groups.add(Group.objects.get(name=role.value))
    if person is not None:
        person.user = user
        person.save()
    return user


def client_of(user) -> Client:
    client = Client()
    if user is not None:
        sign_in(client, user)
    return client


@pytest.fixture
def staff(db):
    """role -> signed-in client, for the three staff roles."""
    return {role: client_of(make_user(role.value, role)) for role in STAFF_ROLES}


@pytest.fixture
def books(edcp):
    """Two participants of EDCP with credited accounts on JAN15 and JAN16; both have portal logins."""
    fund = FundFactory(plan=edcp, code="SV", name="Stable Value", is_default=True)
    for day, p in ((JAN15, "20.00"), (JAN16, "22.00")):
        price(fund, day, p)
    people = {}
    for name, amount in (("alice", "1000.00"), ("bob", "5000.00")):
        participation = ParticipationFactory(plan=edcp, person=PersonFactory(first_name=name.title()))
        credit_create(
            participation=participation,
            account_name="retirement_termination",
            source=Source.DEFERRAL,
            amount=Decimal(amount),
            effective_date=JAN15,
            idempotency_key=f"pages:{name}",
            actor="test",
        )
        make_user(name, Role.PARTICIPANT, person=participation.person)
        people[name] = participation
    credit_valuation_date(valuation_date=JAN15)
    credit_valuation_date(valuation_date=JAN16)
    return people
