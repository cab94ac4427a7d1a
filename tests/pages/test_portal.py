"""The portal shows the signed-in participant's own books and nobody else's."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest
from django.urls import reverse
from freezegun import freeze_time

from books.models import Account
from books.selectors import account_values, holdings_on
from core.roles import Role
from tests.pages.conftest import client_of

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _frozen():
    with freeze_time("2026-01-20 15:00:00"):
        yield


def test_the_portal_shows_the_participants_balance_by_fund_vested_and_a_chart(books):
    page = client_of(books["alice"].person.user).get(reverse("portal_home") + "?range=all").content.decode()
    assert "Retirement/Termination Account" in page
    # Issue 11: units to 4 decimals and prices to 2 in the portal.
    assert "Stable Value" in page and "50.0000" in page and "22.00" in page and "50.000000" not in page
    assert "$1,100.00" in page  # total and vested (deferrals vest at once, EDCP 4.2)
    assert "EDCP 4.2" in page
    assert '<svg class="chart"' in page and '<path class="line"' in page
    assert "5,500.00" not in page and "Bob" not in page


def test_another_participants_account_answers_404(books):
    bobs = Account.objects.get(participation=books["bob"])
    client = client_of(books["alice"].person.user)
    assert client.get(reverse("books_portal:account", args=[bobs.pk])).status_code == 404
    own = Account.objects.get(participation=books["alice"])
    response = client.get(reverse("books_portal:account", args=[own.pk]))
    assert response.status_code == 200 and "1,100.00" in response.content.decode()


def test_staff_are_not_participants_on_the_portal(staff, books):
    own = Account.objects.get(participation=books["alice"])
    for client in staff.values():
        assert client.get(reverse("portal_home")).status_code == 403
        assert client.get(reverse("books_portal:account", args=[own.pk])).status_code == 403


def test_a_participant_with_no_account_sees_an_empty_portal(books, edcp):
    from tests.factories import ParticipationFactory
    from tests.pages.conftest import make_user

    newcomer = ParticipationFactory(plan=edcp)
    user = make_user("newcomer", Role.PARTICIPANT, person=newcomer.person)
    page = client_of(user).get(reverse("portal_home")).content.decode()
    assert "No account has been credited yet." in page and "No balance history yet" in page


def test_holdings_match_account_values_on_a_credited_date(books):
    accounts = list(Account.objects.all())
    day = dt.date(2026, 1, 16)
    assert {a: h["value"] for a, h in holdings_on(accounts=accounts, on=day).items()} == account_values(
        accounts=accounts, on=day
    )
    assert holdings_on(accounts=accounts, on=day)[accounts[0].id]["value"] in (
        Decimal("1100.00"),
        Decimal("5500.00"),
    )


def test_holdings_on_a_day_not_yet_credited_show_the_last_credited_positions(books):
    account = Account.objects.get(participation=books["alice"])
    # 2026-01-20 is a Valuation Date whose crediting has not run yet (prices arrive in the evening).
    assert holdings_on(accounts=[account], on=dt.date(2026, 1, 20))[account.id]["value"] == Decimal("1100.00")
