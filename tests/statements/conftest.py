"""A quarter of real books for the statement tests: Q1 2026 of one EDCP participant, credited day by day."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest

from books.models import Account, EntryKind, Source
from books.services.accounts import credit_create, pending_create
from books.services.crediting import credit_valuation_date
from core import valuation_calendar as cal
from tests.factories import FundFactory, ParticipationFactory, price

# The BRP's toy actuarial basis and Key Employee lists, for the annual benefit statement.
from tests.pensions.conftest import no_key_employees, toy_basis  # noqa: F401

OPENING = dt.date(2025, 12, 31)  # the Valuation Date that closes 2025
QUARTER_END = dt.date(2026, 3, 31)


def credit_through(day: dt.date, start: dt.date = OPENING) -> None:
    for d in cal.valuation_dates_between(start, day):
        credit_valuation_date(valuation_date=d)


@pytest.fixture(scope="module")
def quarter_books(django_db_setup, django_db_blocker):
    """The quarter, credited once for the module (62 Valuation Dates through the real crediting job) inside a
    transaction that is rolled back when the module ends; each test runs in a savepoint of it."""
    from django.db import transaction

    with django_db_blocker.unblock():
        outer = transaction.atomic()
        outer.__enter__()
        try:
            yield _build()
        finally:
            transaction.set_rollback(True)
            outer.__exit__(None, None, None)


@pytest.fixture
def quarter(quarter_books, db, settings, tmp_path):
    from participants.models import Participation

    settings.MEDIA_ROOT = str(tmp_path)
    participation = Participation.objects.select_related("person", "plan").get(pk=quarter_books)
    return {"participation": participation, "person": participation.person}


def _build() -> int:
    """Opening 10,000.00 (Dec 31), a deferral of 1,000.00 (Jan 30), a Company matching credit of 500.00
    (Feb 27) and a distribution of 200.00 (Mar 16); prices move every day."""
    from plans.models import Plan

    edcp = Plan.objects.get(code="EDCP")
    fund = FundFactory(plan=edcp, code="SV", name="Stable Value", is_default=True)
    days = cal.valuation_dates_between(OPENING, QUARTER_END)
    for i, day in enumerate(days):
        price(fund, day, str(Decimal("10.00") + Decimal(i % 7) / Decimal(20) + Decimal(i) / Decimal(100)))
    participation = ParticipationFactory(plan=edcp)

    def credit(account: str, source: str, amount: str, day: dt.date, key: str) -> None:
        credit_create(
            participation=participation,
            account_name=account,
            source=source,
            amount=Decimal(amount),
            effective_date=day,
            idempotency_key=key,
            actor="test",
        )

    credit("retirement_termination", Source.DEFERRAL, "10000.00", OPENING, "q:open")
    credit("retirement_termination", Source.DEFERRAL, "1000.00", dt.date(2026, 1, 30), "q:def")
    credit("company_contribution", Source.COMPANY_MATCHING, "500.00", dt.date(2026, 2, 27), "q:match")
    credit_through(dt.date(2026, 3, 13))
    account = Account.objects.get(participation=participation, kind="retirement_termination")
    pending_create(
        account=account,
        kind=EntryKind.DISTRIBUTION,
        source=Source.DISTRIBUTION,
        amount=Decimal("-200.00"),
        effective_date=dt.date(2026, 3, 16),
        idempotency_key="q:dist",
        actor="test",
    )
    credit_through(QUARTER_END, start=dt.date(2026, 3, 16))
    return participation.pk
