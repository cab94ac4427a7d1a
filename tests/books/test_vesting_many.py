"""Vesting for many accounts at once (the liability report, the pages): the same answer as one account at a time,
in a number of queries that does not grow with the number of accounts (EDCP 4.2, RRP 3.06)."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from books.models import Account
from books.services.accounts import account_get_or_open
from books.services.vesting import vested_percent, vested_percents
from participants.services import change_in_control_record, employment_event_record, vesting_service_record
from tests.books.test_contributions_and_vesting import cc_account
from tests.factories import ParticipationFactory, PersonFactory

pytestmark = pytest.mark.django_db


def _population(edcp, rrp) -> list[Account]:
    accounts = [cc_account(edcp, years)[1] for years in (0, 1, 2, 3)]
    part, dead = cc_account(edcp, 0)
    employment_event_record(
        person=part.person, kind="death", effective_date=dt.date(2026, 5, 1), actor="test"
    )
    part, left = cc_account(edcp, 1)
    employment_event_record(
        person=part.person,
        kind="separation",
        effective_date=dt.date(2026, 3, 20),
        reason="resignation",
        actor="t",
    )
    matching = ParticipationFactory(plan=rrp, person=PersonFactory(hire_date=dt.date(2014, 6, 1)))
    vesting_service_record(person=matching.person, through_year=2015, years=1)
    vesting_service_record(person=matching.person, through_year=2025, years=11)
    rrp_account = account_get_or_open(participation=matching, kind="matching", on=dt.date(2016, 1, 1))
    deferral = account_get_or_open(participation=matching, kind="elective_deferral", on=dt.date(2016, 1, 1))
    return [*accounts, dead, left, rrp_account, deferral]


def _fresh(accounts: list[Account]) -> list[Account]:
    ids = [a.id for a in accounts]
    return list(
        Account.objects.filter(id__in=ids)
        .select_related("participation__plan", "participation__person")
        .order_by("id")
    )


@pytest.mark.parametrize(
    "on", [dt.date(2016, 6, 1), dt.date(2026, 4, 1), dt.date(2026, 6, 1), dt.date(2026, 7, 2)]
)
def test_many_accounts_at_once_give_each_account_its_own_answer(edcp, rrp, on):
    accounts = _population(edcp, rrp)
    if on == dt.date(2026, 7, 2):
        change_in_control_record(effective_date=dt.date(2026, 7, 1), actor="test")
    together = vested_percents(accounts=_fresh(accounts), on=on)
    one_by_one = {a.id: vested_percent(account=a, on=on) for a in _fresh(accounts)}
    assert together == one_by_one
    assert {percent for percent, _ in together.values()} >= {Decimal(0), Decimal(100)}


def test_the_number_of_queries_does_not_grow_with_the_accounts(edcp, rrp):
    few = _population(edcp, rrp)
    many = few + _population(edcp, rrp) + _population(edcp, rrp)
    on = dt.date(2026, 6, 1)
    counts = []
    for accounts in (few, many):
        loaded = _fresh(accounts)
        with CaptureQueriesContext(connection) as queries:
            vested_percents(accounts=loaded, on=on)
        counts.append(len(queries))
    assert counts[0] == counts[1], counts
