"""The portal's pages read in a number of queries that does not grow with the participant's accounts (issue 15):
a participant with 1 account and one with 6 (EDCP allows at most 5 Specified Date Accounts, 1.32, besides the
Retirement/Termination Account), each with two days of history, make the same number of queries on each page."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from books.models import Account, DailyValuation, Source
from books.services.accounts import credit_create
from books.services.crediting import credit_valuation_date
from core import valuation_calendar as cal
from core.roles import Role
from payments.models import PaymentSchedule, ScheduledPayment
from plans.models import FundPrice
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


# Three years of history: every Valuation Date credited, a credit to each account in the first week of each month.
HISTORY_START, HISTORY_END = dt.date(2023, 1, 3), dt.date(2026, 1, 16)
MANY_ACCOUNTS = {
    # EDCP 1.1: the Retirement/Termination Account, five Specified Date Accounts (1.32) and the Company
    # Contribution Account (1.9); RRP 3.02-3.04: its three accounts. Ten accounts is the most the catalog allows a
    # person in the account-balance plans (the BRP keeps a benefit record, not a balance).
    "EDCP": [("retirement_termination", Source.DEFERRAL)]
    + [(f"specified_date:{2030 + i}-03", Source.DEFERRAL) for i in range(5)]
    + [("company_contribution", Source.COMPANY_RETIREMENT)],
    "RRP": [
        ("elective_deferral", Source.DEFERRAL),
        ("matching", Source.MATCHING),
        ("retirement_restoration", Source.RESTORATION),
    ],
}
ONE_ACCOUNT = {
    "EDCP": ("company_contribution", Source.COMPANY_RETIREMENT),
    "RRP": ("matching", Source.MATCHING),
}
PORTAL_PAGES = (
    "portal_home",
    "payments_portal:calendar",
    "elections_portal:home",
    "claims_portal:list",
    "statements_portal:list",
    "participants_portal:notices",
)


def _long_history(edcp, rrp):
    days = cal.valuation_dates_between(HISTORY_START, HISTORY_END)
    now = timezone.now()
    for plan, code in ((edcp, "SV"), (rrp, "MMKT")):
        fund = FundFactory(plan=plan, code=code, name=f"{code} fund", is_default=True)
        FundPrice.objects.bulk_create(
            FundPrice(
                fund=fund, date=day, price=Decimal("20.00") + Decimal(n) / 100, loaded_at=now, source="test"
            )
            for n, day in enumerate(days)
        )
    many_person, one_person = PersonFactory(first_name="Many"), PersonFactory(first_name="One")
    one = {plan: ParticipationFactory(plan=plan, person=one_person) for plan in (edcp, rrp)}
    many = {plan: ParticipationFactory(plan=plan, person=many_person) for plan in (edcp, rrp)}
    firsts = sorted({day.replace(day=1): day for day in reversed(days)}.values())
    for month in firsts:
        for plan, participation in many.items():
            for i, (account, source) in enumerate(MANY_ACCOUNTS[plan.code]):
                credit_create(
                    participation=participation,
                    account_name=account,
                    source=source,
                    amount=Decimal("250.00") + i,
                    effective_date=month,
                    idempotency_key=f"h:{plan.code}:{account}:{month}",
                    actor="test",
                )
    # The other participant has a single credit three years ago: one entry, one account in each plan. Of a kind
    # that vests on a schedule (EDCP 4.2, RRP 3.06) and opened under the same plan versions as the other's, because
    # a page reads the vesting facts once when some account needs them and an account's label is the plan's name
    # for it when it was opened (PlanVersion provisions): reads per plan, per plan version and per vesting rule,
    # which the catalog bounds, never per account or per day of history.
    for plan, participation in one.items():
        account, source = ONE_ACCOUNT[plan.code]
        credit_create(
            participation=participation,
            account_name=account,
            source=source,
            amount=Decimal("500.00"),
            effective_date=firsts[0],
            idempotency_key=f"h:one:{plan.code}",
            actor="test",
        )
    for day in days:
        credit_valuation_date(valuation_date=day)
    make_user("one", Role.PARTICIPANT, person=one_person)
    make_user("many", Role.PARTICIPANT, person=many_person)
    return one, many


def test_each_portal_page_reads_the_same_queries_for_1_account_and_10_with_three_years_of_history(edcp, rrp):
    one, many = _long_history(edcp, rrp)
    accounts = Account.objects.filter(participation__person=many[edcp].person)
    assert accounts.count() == 10
    assert DailyValuation.objects.filter(account__in=accounts).dates("valuation_date", "year").count() == 4
    clients = {"one": client_of(one[edcp].person.user), "many": client_of(many[edcp].person.user)}
    counts: dict[str, dict[str, int]] = {}
    for page in PORTAL_PAGES:
        for who, client in clients.items():
            client.get(reverse(page))  # the first visit of a session may warm caches; count the second
            counts.setdefault(page, {})[who] = _count(client, reverse(page))
    for who, account in (
        ("one", Account.objects.get(participation=one[edcp])),
        ("many", accounts.filter(kind="specified_date").order_by("pk").last()),
        ("one", Account.objects.get(participation=one[rrp])),
        ("many", accounts.filter(participation=many[rrp]).order_by("pk").last()),
    ):
        url = reverse("books_portal:account", args=[account.pk])
        clients[who].get(url)
        # per plan: a page reads each plan version in force once, and the plans have different numbers of them
        page = f"books_portal:account ({account.participation.plan.code})"
        counts.setdefault(page, {})[f"{who}:{account.kind}"] = _count(clients[who], url)
    assert {page: len(set(c.values())) for page, c in counts.items()} == dict.fromkeys(counts, 1), counts


def _installments(participation, count: int) -> None:
    """`count` annual installments of the participant's Retirement/Termination Account (EDCP 5.2(b)), each on a
    Payment Date of its own, so that each has its own release date and withholding tables to look up."""
    account = Account.objects.get(participation=participation, kind="retirement_termination")
    schedule = PaymentSchedule.objects.create(
        participation=participation,
        account=account,
        trigger="separation",
        trigger_date=dt.date(2025, 6, 30),
        form="installments",
        installments=count,
        cite="EDCP 5.2(b)",
        computed_at=timezone.now(),
    )
    ScheduledPayment.objects.bulk_create(
        ScheduledPayment(
            schedule=schedule,
            account=account,
            participation=participation,
            trigger="separation",
            kind=ScheduledPayment.Kind.INSTALLMENT,
            number=n,
            of=count,
            share=ScheduledPayment.Share.INSTALLMENT,
            payment_date=dt.date(2026 + n, 1, 15),
            valuation_rule="release_date",
            valuable_on=dt.date(2026 + n, 1, 14),
            release_date=dt.date(2026 + n, 1, 15),
            cite="EDCP 5.2(b)",
            reason="test installment",
            created_at=timezone.now(),
        )
        for n in range(1, count + 1)
    )


def test_the_payment_calendar_reads_the_same_queries_for_1_installment_and_24(edcp):
    """Every payment's account label, plan version and withholding tables come from reads made once per page
    (the plan's versions shared per request, plans.middleware; one read of the withholding tables for every
    release date), not once per payment: before, a retiree's calendar grew by five queries a payment."""
    _population(edcp)
    # two participants alike but for the number of their installments
    few, lots = (_participant(edcp, name, ["retirement_termination"]) for name in ("few", "lots"))
    credit_valuation_date(valuation_date=JAN15)
    credit_valuation_date(valuation_date=JAN16)
    _installments(few, 1)
    _installments(lots, 24)
    url = reverse("payments_portal:calendar")
    counts = []
    for p in (few, lots):
        client = client_of(p.person.user)
        client.get(url)
        counts.append(_count(client, url))
    assert counts[0] == counts[1], counts
