"""The liability report's defined benefit lines for many participants at once (issue 15): the same answers, to
the cent, as one participant at a time, in a number of queries that does not grow with the participants (the
figures, events, benefits in pay and payments read once; Key Employee lists, IRS figures and actuarial factors
once per run, core.memo). On the real actuarial basis of the catalog, not the toy one. The account plans' lines:
each account valued and vested as one at a time would, in a number of queries that does not grow with the
accounts (values by aggregate SQL, vesting for the whole plan at once)."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from books.liability import plan_liability
from books.models import Account, DefinedBenefitRecord, Source
from books.selectors import holdings_on
from books.services.accounts import credit_create
from books.services.crediting import credit_valuation_date
from books.services.vesting import vested_percent
from core import memo
from core.money import money
from participants.models import Participation
from participants.services import employment_event_record
from payments.liability import defined_benefit_value
from plans.models import Plan
from tests.books.test_contributions_and_vesting import cc_account
from tests.factories import FundFactory, price
from tests.pensions.factories import brp_participation, key_employees, separate

pytestmark = pytest.mark.django_db
AS_OF = dt.date(2026, 6, 1)


def _employed(i: int) -> Participation:
    return brp_participation(birth=dt.date(1961, 5, 1 + i))


def _employed_married_pre_2005(i: int) -> Participation:
    participation = brp_participation(
        birth=dt.date(1960, 3, 1 + i), marital="married", spouse_birth=dt.date(1963, 7, 1), spouse_name="Pat"
    )
    DefinedBenefitRecord.objects.filter(participation=participation).update(
        pre_2005_annual_benefit=Decimal("20000.00")
    )
    return participation


def _in_pay_single(i: int) -> Participation:
    participation = brp_participation(birth=dt.date(1961, 4, 1 + i))
    separate(participation, dt.date(2026, 4, 20))
    return participation


def _in_pay_joint_then_died(i: int) -> Participation:
    participation = brp_participation(
        birth=dt.date(1961, 2, 1 + i), marital="married", spouse_birth=dt.date(1966, 5, 1), spouse_name="Pat"
    )
    separate(participation, dt.date(2026, 4, 20))
    if i % 2:
        separate(participation, dt.date(2026, 5, 10), kind="death")
    return participation


def _not_eligible(i: int) -> Participation:
    return brp_participation(
        service="5.00", erd=dt.date(2031, 5, 1), nrd=dt.date(2036, 5, 1), birth=dt.date(1971, 5, 1 + i)
    )


KINDS = (_employed, _employed_married_pre_2005, _in_pay_single, _in_pay_joint_then_died, _not_eligible)


def _population(per_kind: int) -> list[Participation]:
    key_employees(2024)
    people = [kind(i) for i in range(per_kind) for kind in KINDS]
    key_employees(2025, people[0].person)  # one Key Employee: his payments start later (BRP 4.3)
    return people


def _line(b) -> tuple:
    return (b.participation.pk, b.status, b.value, b.method, b.cite, b.note)


def test_the_lines_of_all_at_once_are_the_lines_one_at_a_time_to_the_cent(db):
    people = _population(2)
    together = plan_liability(plan=Plan.objects.get(code="BRP"), as_of=AS_OF).benefits
    assert not memo.active()  # the run's memo ended with the report
    one_by_one = {
        p.pk: defined_benefit_value(
            participation=Participation.objects.select_related("person", "plan").get(pk=p.pk), as_of=AS_OF
        )
        for p in people
    }
    assert len(together) == len(people) == 10
    assert [_line(b) for b in together] == [_line(one_by_one[b.participation.pk]) for b in together]
    valued = [b for b in together if b.value is not None]
    assert len(valued) == 8 and all(b.value > 0 for b in valued if b.status != "ended at death")
    assert {b.status for b in together} >= {"employed", "in pay", "in pay to the survivor"}


def _queries(brp: Plan) -> int:
    with CaptureQueriesContext(connection) as queries:
        plan_liability(plan=brp, as_of=AS_OF)
    return len(queries)


def test_the_queries_do_not_grow_with_the_participants(db):
    brp = Plan.objects.get(code="BRP")
    _population(1)  # 5 participants, one of each kind
    few = _queries(Plan.objects.get(pk=brp.pk))
    for i in range(1, 3):
        for kind in KINDS:
            kind(i)
    assert Participation.objects.filter(plan=brp).count() == 15
    assert _queries(Plan.objects.get(pk=brp.pk)) == few


# --- account plans: values by aggregate SQL, vesting for the whole plan at once ------------------------------

JAN15, JAN16 = dt.date(2026, 1, 15), dt.date(2026, 1, 16)


def _edcp_people(edcp, start: int, count: int, on: dt.date = JAN15) -> None:
    """`count` participants with a deferral credited `on`, a company contribution (vested after two years of
    service, EDCP 4.2), and one in three separated."""
    for i in range(start, start + count):
        part, _ = cc_account(edcp, i % 4)
        credit_create(
            participation=part,
            account_name="retirement_termination",
            source=Source.DEFERRAL,
            amount=Decimal("1000.00") + i,
            effective_date=on,
            idempotency_key=f"scale:{i}",
            actor="test",
        )
        if i % 3 == 2:
            employment_event_record(
                person=part.person,
                kind="separation",
                effective_date=dt.date(2026, 1, 10),
                reason="resignation",
                actor="test",
            )


@pytest.fixture
def priced(edcp):
    fund = FundFactory(plan=edcp, code="SV", is_default=True)
    for day, p in ((JAN15, "20.00"), (JAN16, "22.00")):
        price(fund, day, p)


def _account_lines_queries(edcp, on: dt.date) -> int:
    with CaptureQueriesContext(connection) as queries:
        plan_liability(plan=Plan.objects.get(pk=edcp.pk), as_of=on)
    return len(queries)


def test_the_account_lines_read_in_a_number_of_queries_that_does_not_grow_with_the_accounts(edcp, priced):
    _edcp_people(edcp, 0, 3)
    assert credit_valuation_date(valuation_date=JAN15).status == "done"
    few = _account_lines_queries(edcp, JAN15)
    _edcp_people(edcp, 3, 9, on=JAN16)
    assert credit_valuation_date(valuation_date=JAN16).status == "done"
    assert Account.objects.filter(participation__plan=edcp).count() == 24
    assert _account_lines_queries(edcp, JAN16) == few


def test_the_account_lines_are_each_account_valued_and_vested_one_at_a_time(edcp, priced):
    _edcp_people(edcp, 0, 8)
    _edcp_people(edcp, 8, 2, on=JAN16)  # waiting for Jan 16's crediting: valued at face
    assert credit_valuation_date(valuation_date=JAN15).status == "done"
    report = plan_liability(plan=edcp, as_of=JAN16)
    expected: dict[str, list] = {}
    for account in Account.objects.filter(participation__plan=edcp).select_related(
        "participation__plan", "participation__person"
    ):
        value = holdings_on(accounts=[account], on=JAN16)[account.id]["value"]
        if value == 0:
            continue
        percent, _ = vested_percent(account=account, on=JAN16)
        line = expected.setdefault(account.kind, [0, Decimal("0.00"), Decimal("0.00")])
        line[0] += 1
        line[1] += value
        line[2] += money(value * percent / 100)
    got = {a.kind: [a.accounts, a.value, a.vested] for a in report.accounts if a.accounts}
    assert got == expected
    assert expected["retirement_termination"][1] > Decimal("8000.00")  # invested: priced at 22 after 20
    assert Decimal(0) < expected["company_contribution"][2] < expected["company_contribution"][1]
