"""Issue 11: the what-if of the account plans asks the schedule engine for a chosen separation date and writes
nothing (rows counted before and after)."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest
from django.test import Client
from django.urls import reverse

from books.models import LedgerEntry, Position
from core.audit import AuditEvent
from participants.models import Person
from payments.models import PaymentSchedule, ScheduledPayment
from payments.services.whatif import WhatIfRefused, account_whatif
from tests.elections.factories import user_with_role
from tests.payments.factories import deferrals, scenario, simulate
from tests.signin import sign_in

pytestmark = pytest.mark.django_db

KEY_2025 = {"P1": {"birth_date": "1968-04-10", "hire_date": "2012-03-01", "key_employee_years": [2025]}}


def _counts() -> tuple[int, ...]:
    return tuple(
        m.objects.count() for m in (LedgerEntry, Position, PaymentSchedule, ScheduledPayment, AuditEvent)
    )


def test_a_separation_pays_the_termination_lump_sum_on_the_engines_date_and_nothing_is_written():
    simulate(scenario(events=deferrals(gross="20000.00"), through="2026-06-30"))
    person = Person.objects.get(employee_number="P1")
    before = _counts()
    result = account_whatif(person=person, separation=dt.date(2026, 9, 10), as_of=dt.date(2026, 7, 1))
    assert _counts() == before
    termination = next(a for a in result.accounts if a.payments)
    assert [(p.payment_date, p.gross) for p in termination.payments] == [
        (dt.date(2026, 10, 15), Decimal("60000.00"))  # EDCP 5.1(b): the 15th of the month after separation
    ]
    assert any("0% a year" in a for a in result.assumptions)


def test_a_key_employee_waits_in_the_whatif_and_the_return_grows_the_balance():
    simulate(scenario(participants=KEY_2025, events=deferrals(gross="20000.00"), through="2026-06-30"))
    person = Person.objects.get(employee_number="P1")
    result = account_whatif(
        person=person, separation=dt.date(2026, 9, 10), as_of=dt.date(2026, 7, 1), annual_return=Decimal("5")
    )
    payment = next(a for a in result.accounts if a.payments).payments[0]
    assert payment.payment_date == dt.date(2027, 4, 1)  # EDCP 5.1(b): the 1st day of the 7th month after
    assert payment.gross > Decimal("60000.00")


def test_a_separation_in_the_past_is_refused():
    simulate(scenario(events=deferrals(gross="20000.00"), through="2026-06-30"))
    with pytest.raises(WhatIfRefused):
        account_whatif(
            person=Person.objects.get(employee_number="P1"),
            separation=dt.date(2026, 6, 1),
            as_of=dt.date(2026, 7, 1),
        )


def test_the_whatif_page_states_its_assumptions(db):
    person = Person.objects.create(
        employee_number="W1",
        first_name="Wendy",
        last_name="Whatif",
        birth_date=dt.date(1970, 1, 1),
        hire_date=dt.date(2010, 1, 1),
        user=user_with_role("wendy", "participant"),
    )
    client = Client()
    sign_in(client, person.user)
    page = client.get(
        reverse("payments_portal:whatif"), {"separation": "2040-01-01", "annual_return": "3"}
    ).content.decode()
    assert 'id="whatif-assumptions"' in page and "3% a year" in page
