"""The read API: staff see every account with its balance; a participant sees only their own."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest
from django.contrib.auth.models import Group
from django.test import Client

from books.models import Account, Source
from books.services.accounts import credit_create
from books.services.crediting import credit_valuation_date
from core.roles import Role
from tests.factories import FundFactory, ParticipationFactory, PersonFactory, price
from tests.imports.conftest import user_with
from tests.signin import sign_in

pytestmark = pytest.mark.django_db
DAY1, DAY2 = dt.date(2024, 5, 30), dt.date(2024, 5, 31)


@pytest.fixture
def books(edcp):
    fund = FundFactory(plan=edcp, code="SV", is_default=True)
    price(fund, DAY1, "20.00")
    price(fund, DAY2, "22.00")
    owners = []
    for number in ("M1", "M2"):
        user = user_with(Role.PARTICIPANT, number.lower())
        participation = ParticipationFactory(
            plan=edcp, person=PersonFactory(employee_number=number, user=user)
        )
        credit_create(
            participation=participation,
            account_name="retirement_termination",
            source=Source.DEFERRAL,
            amount=Decimal("1000.00"),
            effective_date=DAY1,
            idempotency_key=f"r:{number}",
            actor="t",
        )
        owners.append(user)
    credit_valuation_date(valuation_date=DAY1)
    credit_valuation_date(valuation_date=DAY2)
    return owners


def _client(user) -> Client:
    client = Client()
    sign_in(client, user)
    return client


def test_a_participant_reads_their_own_accounts_balances_positions_and_history(books):
    me = _client(books[0])
    accounts = me.get("/api/books/me/accounts/?as_of=2024-05-31").json()["results"]
    assert [(a["employee_number"], a["balance"]) for a in accounts] == [("M1", "1100.00")]
    detail = me.get(f"/api/books/me/accounts/{accounts[0]['id']}/?as_of=2024-05-31").json()
    assert [(p["fund"], p["units"], p["value"], p["earnings"]) for p in detail["positions"]] == [
        ("SV", "50.000000", "1100.00", "100.00")
    ]
    history = me.get("/api/books/me/history/?start=2024-05-01&end=2024-05-31").json()
    assert history == [{"date": "2024-05-30", "value": "1000.00"}, {"date": "2024-05-31", "value": "1100.00"}]
    other = Account.objects.get(participation__person__employee_number="M2")
    assert me.get(f"/api/books/me/accounts/{other.pk}/").status_code == 404
    assert me.get(f"/api/books/me/accounts/{other.pk}/history/").status_code == 404
    assert me.get("/api/books/accounts/").status_code == 403
    assert me.get("/api/books/me/accounts/?as_of=yesterday").status_code == 400


def test_staff_read_every_account_with_balances_entries_people_and_plans(books):
    auditor = _client(user_with(Role.AUDITOR, "aud"))
    accounts = auditor.get("/api/books/accounts/?as_of=2024-05-31").json()["results"]
    assert sorted((a["employee_number"], a["balance"]) for a in accounts) == [
        ("M1", "1100.00"),
        ("M2", "1100.00"),
    ]
    entries = auditor.get(f"/api/books/accounts/{accounts[0]['id']}/entries/").json()["results"]
    assert [(e["kind"], e["amount"], e["price"]) for e in entries] == [("credit", "1000.00", "20.000000")]
    people = auditor.get("/api/participants/people/?search=M2").json()["results"]
    assert [p["employee_number"] for p in people] == ["M2"]
    plan = auditor.get("/api/plans/plans/EDCP/").json()
    assert [v["effective_date"] for v in plan["versions"]] == ["2011-01-01", "2024-08-01"]
    assert any(p["key"] == "deferral_components" and p["citation"] for p in plan["versions"][0]["provisions"])
    assert auditor.get("/api/books/job-runs/").json()["count"] == 2
    a_participant = Group.objects.get(name="participant").user_set.first()
    assert _client(a_participant).get("/api/participants/people/").status_code == 403
