"""The portal's pages read in a number of queries that does not grow with the participant's accounts (issue 15):
a participant with 1 account and one with 6 (EDCP allows at most 5 Specified Date Accounts, 1.32, besides the
Retirement/Termination Account), each with two days of history, make the same number of queries on each page."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from books.models import Account, Source
from books.services.accounts import credit_create
from books.services.crediting import credit_valuation_date
from core.roles import Role
from tests.factories import FundFactory, ParticipationFactory, PersonFactory, price
from tests.pages.conftest import JAN15, JAN16, client_of, make_user

pytestmark = pytest.mark.django_db

PAGES = ("portal_home", "payments_portal:calendar")


def _participant(edcp, name: str, accounts: list[str]):
    participation = ParticipationFactory(plan=edcp, person=PersonFactory(first_name=name.title()))
    for i, account in enumerate(accounts):
        for day in (JAN15, JAN16):
            credit_create(
                participation=participation,
                account_name=account,
                source=Source.DEFERRAL,
                amount=Decimal("100.00") + i,
                effective_date=day,
                idempotency_key=f"q:{name}:{account}:{day}",
                actor="test",
            )
    make_user(name, Role.PARTICIPANT, person=participation.person)
    return participation


def _count(client, url: str) -> int:
    with CaptureQueriesContext(connection) as queries:
        response = client.get(url)
    assert response.status_code == 200, url
    return len(queries)


def _population(edcp):
    fund = FundFactory(plan=edcp, code="SV", name="Stable Value", is_default=True)
    for day, p in ((JAN15, "20.00"), (JAN16, "22.00")):
        price(fund, day, p)
    one = _participant(edcp, "one", ["retirement_termination"])
    many = _participant(
        edcp, "many", ["retirement_termination"] + [f"specified_date:{2030 + i}-03" for i in range(5)]
    )
    credit_valuation_date(valuation_date=JAN15)
    credit_valuation_date(valuation_date=JAN16)
    assert Account.objects.filter(participation=many).count() == 6
    return one, many


def test_each_portal_page_reads_the_same_queries_for_1_and_6_accounts(edcp):
    one, many = _population(edcp)
    clients = {p: client_of(p.person.user) for p in (one, many)}
    counts = {}
    for page in PAGES:
        url = reverse(page)
        for p, client in clients.items():
            client.get(url)  # the first visit of a session may warm caches; count the second
            counts[(page, p.person.first_name)] = _count(client, url)
    for acct in (
        Account.objects.filter(participation=one).first(),
        Account.objects.filter(participation=many).last(),
    ):
        client = clients[one] if acct.participation_id == one.pk else clients[many]
        counts[("books_portal:account", acct.participation.person.first_name)] = _count(
            client, reverse("books_portal:account", args=[acct.pk])
        )
    by_page: dict[str, dict[str, int]] = {}
    for (page, who), n in counts.items():
        by_page.setdefault(page, {})[who] = n
    assert {page: len(set(c.values())) for page, c in by_page.items()} == dict.fromkeys(by_page, 1), by_page


def test_the_elections_home_reads_the_same_queries_for_1_and_6_accounts(edcp):
    one, many = _population(edcp)
    url = reverse("elections_portal:home")
    counts = []
    for p in (one, many):
        client = client_of(p.person.user)
        client.get(url)
        counts.append(_count(client, url))
    assert counts[0] == counts[1], counts
