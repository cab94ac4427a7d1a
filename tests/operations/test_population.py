"""The large population: the demo's people copied set-based (operations.population), every table of a person with
them, keys moved, unique texts told apart, shared rows (plans, funds, staff) kept."""

from __future__ import annotations

import datetime as dt
import io
from decimal import Decimal

import pytest
from django.apps import apps
from django.contrib.auth.models import User
from django.core.management import call_command

from books.models import Account, DailyValuation, LedgerEntry, Position, Source
from books.services.accounts import credit_create
from books.services.crediting import credit_valuation_date
from books.services.verify import books_verify
from operations.population import population_copy
from participants.models import Participation, Person
from plans.models import Fund
from tests.elections.factories import participant
from tests.factories import FundFactory, price

pytestmark = pytest.mark.django_db

DAYS = [dt.date(2026, 1, 13), dt.date(2026, 1, 14), dt.date(2026, 1, 15), dt.date(2026, 1, 16)]


@pytest.fixture
def demo(edcp):
    fund = FundFactory(plan=edcp, code="SV", is_default=True)
    for n, day in enumerate(DAYS):
        price(fund, day, f"{20 + n}.00")
    people = []
    for n in range(2):
        part = participant(username=f"demo{n}")
        credit_create(
            participation=part,
            account_name="retirement_termination",
            source=Source.DEFERRAL,
            amount=Decimal("1000.00") * (n + 1),
            effective_date=DAYS[0],
            idempotency_key=f"demo:{n}",
            actor="test",
        )
        people.append(part.person)
    for day in DAYS:
        credit_valuation_date(valuation_date=day)
    return people


def test_each_copy_is_a_person_of_their_own_with_their_own_books(demo):
    added = population_copy(copies=3, history_days=2, as_of=DAYS[-1])
    assert Person.objects.count() == 8 and User.objects.filter(person__isnull=False).count() == 8
    assert added["books_ledgerentry"] == 6 and LedgerEntry.objects.count() == 8
    # The copies have the last two Valuation Dates of daily valuations and the day their entry was valued; the
    # demo's people keep all four.
    assert added["books_dailyvaluation"] == 2 * 3 * 3
    assert DailyValuation.objects.filter(valuation_date=DAYS[1]).count() == 2
    copy = Person.objects.get(employee_number=f"{demo[1].employee_number}-2")
    assert copy.user.username == "demo1-2"
    assert copy.user.password == demo[1].user.password  # signs in with the demo password
    account = Account.objects.get(participation__person=copy)
    assert account.participation.plan.code == "EDCP"
    position = Position.objects.get(account=account)
    assert Fund.objects.filter(pk=position.fund_id, code="SV").exists()  # the fund is shared, not copied
    entry = LedgerEntry.objects.get(account=account)
    original = LedgerEntry.objects.get(account__participation__person=demo[1])
    assert (entry.amount, entry.position_id, entry.idempotency_key) == (
        Decimal("2000.00"),
        position.id,
        f"{original.idempotency_key}-2",
    )
    assert list(
        DailyValuation.objects.filter(account=account)
        .order_by("valuation_date")
        .values_list("value", flat=True)
    ) == [Decimal("2000.00"), Decimal("2200.00"), Decimal("2300.00")]
    gap = DailyValuation.objects.get(account=account, valuation_date=DAYS[2])
    assert (gap.flow, gap.earnings) == (Decimal("0.00"), Decimal("200.00"))  # two days' earnings over the gap
    assert Participation.objects.filter(person=copy).count() == 1
    assert books_verify() == []


def test_new_rows_after_a_copy_get_fresh_keys(demo, edcp):
    population_copy(copies=2, history_days=4, as_of=DAYS[-1])
    newcomer = participant(username="newcomer")
    assert newcomer.pk > Participation.objects.exclude(pk=newcomer.pk).order_by("-pk").first().pk
    assert Person.objects.count() == 7


def test_a_copied_demo_population_has_every_table_of_a_person_times_the_copies_and_its_books_verify(settings):
    """The demo built through the services (elections, pay, company contributions, separations, a death,
    forfeitures, payments, BRP figures), copied twice set-based: each table a person owns has three times its rows,
    daily valuations aside (the copies keep the last Valuation Dates and the days their entries were valued), and
    verify_books proves every copy's balances from its entries."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    as_of = dt.date(2026, 6, 30)
    call_command(
        "load_demo",
        "--participants",
        "6",
        "--months",
        "3",
        "--as-of",
        as_of.isoformat(),
        stdout=io.StringIO(),
    )
    owned = (
        "participants.Person",
        "participants.Participation",
        "books.Account",
        "books.Position",
        "books.LedgerEntry",
        "elections.DeferralElection",
        "payments.PaymentSchedule",
    )
    before = {label: apps.get_model(label).objects.count() for label in owned}
    before["signs in"] = User.objects.filter(person__isnull=False, groups__isnull=False).count()
    staff_users = User.objects.filter(person__isnull=True).count()
    assert before["books.LedgerEntry"] and before["elections.DeferralElection"]
    added = population_copy(copies=2, history_days=5, as_of=as_of)
    after = {label: apps.get_model(label).objects.count() for label in owned}
    after["signs in"] = User.objects.filter(person__isnull=False, groups__isnull=False).count()
    assert after == {label: 3 * n for label, n in before.items()}
    assert User.objects.filter(person__isnull=True).count() == staff_users  # staff are shared, not copied
    assert added["books_dailyvaluation"] > 0
    assert Person.objects.values("employee_number").distinct().count() == after["participants.Person"]
    assert books_verify() == []
