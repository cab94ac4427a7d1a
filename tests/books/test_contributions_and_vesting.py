"""Payroll credits, matching, restoration contributions, vesting and forfeiture, as the plans read."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest

from books.models import Account, Forfeiture, PayrollDeferral, PendingTransaction
from books.selectors import account_value
from books.services.accounts import BooksError
from books.services.contributions import company_contribution_credit, restoration_declare
from books.services.payroll import PayrollError, pay_record
from books.services.vesting import vested_percent
from elections.models import DeferralElection
from elections.services import deferral_election_submit
from participants.services import change_in_control_record, employment_event_record, vesting_service_record
from tests.conftest import eastern
from tests.factories import ParticipationFactory, PersonFactory

pytestmark = pytest.mark.django_db


def elect(participation, year, percentages, accounts=None, on=None):
    e = deferral_election_submit(
        participation=participation,
        plan_year=year,
        percentages=percentages,
        accounts=accounts,
        submitted_at=on or eastern(year - 1, 12, 1),
        channel="api",
        actor="test",
    )
    assert e.status == "accepted", e.message
    return e


def pending(participation, account_name):
    return [
        p.amount
        for p in PendingTransaction.objects.filter(account__participation=participation).order_by("id")
        if Account.objects.get(pk=p.account_id).name == account_name
    ]


def test_rrp_plan_compensation_is_the_pay_that_lifts_ytd_compensation_above_the_401a17_limit(rrp):
    part = ParticipationFactory(plan=rrp)
    elect(part, 2026, {"plan_compensation": 10})
    for month in range(1, 10):
        pay_record(
            person=part.person,
            pay_date=dt.date(2026, month, 27),
            component="base_salary",
            gross=Decimal("45000.00"),
            actor="test",
        )
    rows = list(PayrollDeferral.objects.filter(participation=part).order_by("record__pay_date"))
    # 2026 limit 360,000: the 8th pay reaches exactly 360,000, the 9th is all above it
    assert [r.plan_compensation for r in rows] == [Decimal("0.00")] * 8 + [Decimal("45000.00")]
    assert rows[-1].deferral == Decimal("4500.00")


def test_rrp_2017_matching_is_the_deferral_up_to_six_percent_of_the_pay_periods_plan_compensation(rrp):
    part = ParticipationFactory(plan=rrp)
    elect(part, 2026, {"plan_compensation": 10})
    for month in range(1, 10):
        pay_record(
            person=part.person,
            pay_date=dt.date(2026, month, 27),
            component="base_salary",
            gross=Decimal("50000.00"),
            actor="test",
        )
    last = PayrollDeferral.objects.filter(participation=part).order_by("record__pay_date").last()
    assert (last.plan_compensation, last.deferral, last.matching) == (
        Decimal("50000.00"),
        Decimal("5000.00"),
        Decimal("3000.00"),
    )


def test_rrp_2011_matching_is_half_the_announced_percent_of_deferrals_within_five_percent_of_compensation(
    rrp,
):
    part = ParticipationFactory(plan=rrp)
    elect(part, 2015, {"plan_compensation": 20})  # 2011 version in force in 2015; announced max 75%
    for month in range(1, 13):
        pay_record(
            person=part.person,
            pay_date=dt.date(2015, month, 27),
            component="base_salary",
            gross=Decimal("30000.00"),
            actor="test",
        )
    rows = PayrollDeferral.objects.filter(participation=part)
    deferrals = sum(r.deferral for r in rows)
    matching = sum(r.matching for r in rows)
    # Compensation 360,000; limit 265,000 => Plan Compensation 95,000; deferrals 19,000;
    # 50% x 100% x 19,000 = 9,500, within 5% x 360,000 = 18,000.
    assert deferrals == Decimal("19000.00") and matching == Decimal("9500.00")


def test_edcp_deferrals_follow_the_account_allocation(edcp):
    part = ParticipationFactory(plan=edcp)
    elect(part, 2026, {"base_salary": 10}, {"retirement_termination": 60, "specified_date:2031-06": 40})
    pay_record(
        person=part.person,
        pay_date=dt.date(2026, 1, 15),
        component="base_salary",
        gross=Decimal("12345.67"),
        actor="test",
    )
    assert pending(part, "retirement_termination") == [Decimal("740.74")]
    assert pending(part, "specified_date:2031-06") == [Decimal("493.83")]


def test_edcp_deferral_is_reduced_to_the_cash_pay_left_after_taxes(edcp):
    part = ParticipationFactory(plan=edcp)
    elect(part, 2026, {"monthly_bonus": 75})
    pay_record(
        person=part.person,
        pay_date=dt.date(2026, 2, 13),
        component="monthly_bonus",
        gross=Decimal("10000.00"),
        net_available=Decimal("6000.00"),
        actor="test",
    )
    row = PayrollDeferral.objects.get(participation=part)
    assert (row.deferral, row.reduced_by) == (Decimal("6000.00"), Decimal("1500.00"))
    assert "EDCP 1.14" in row.reason


def test_an_evergreen_election_carries_into_the_next_plan_year_until_replaced(edcp):
    part = ParticipationFactory(plan=edcp)
    elect(part, 2025, {"base_salary": 8})
    pay_record(
        person=part.person,
        pay_date=dt.date(2026, 1, 15),
        component="base_salary",
        gross=Decimal("1000.00"),
        actor="test",
    )
    assert PayrollDeferral.objects.get(participation=part).deferral == Decimal("80.00")


def test_pay_for_someone_no_longer_employed_is_refused(edcp):
    part = ParticipationFactory(plan=edcp)
    employment_event_record(
        person=part.person,
        kind="separation",
        effective_date=dt.date(2026, 3, 1),
        reason="resignation",
        actor="test",
    )
    with pytest.raises(PayrollError, match="not employed"):
        pay_record(
            person=part.person,
            pay_date=dt.date(2026, 3, 13),
            component="base_salary",
            gross=Decimal("1000.00"),
            actor="test",
        )


def test_restoration_contribution_needs_employment_on_the_last_day_unless_death_or_retirement(rrp):
    stays, leaves, retires = (
        ParticipationFactory(plan=rrp, person=PersonFactory(birth_date=b))
        for b in (dt.date(1970, 1, 1), dt.date(1970, 1, 1), dt.date(1955, 1, 1))
    )
    for part in (stays, leaves, retires):
        pay_record(
            person=part.person,
            pay_date=dt.date(2026, 11, 30),
            component="base_salary",
            gross=Decimal("400000.00"),
            actor="test",
        )
    employment_event_record(
        person=leaves.person,
        kind="separation",
        effective_date=dt.date(2026, 12, 18),
        reason="resignation",
        actor="test",
    )
    employment_event_record(
        person=retires.person,
        kind="separation",
        effective_date=dt.date(2026, 12, 18),
        reason="retirement",
        actor="test",
    )
    decl = restoration_declare(
        plan=rrp, plan_year=2026, percent=Decimal("4.0"), declared_on=dt.date(2027, 1, 29), actor="test"
    )
    assert decl.participants_credited == 2
    assert pending(stays, "retirement_restoration") == [Decimal("1600.00")]  # 4% of 40,000 above the limit
    assert pending(leaves, "retirement_restoration") == []
    assert pending(retires, "retirement_restoration") == [Decimal("1600.00")]


def test_a_restoration_contribution_is_declared_once_per_year(rrp):
    restoration_declare(
        plan=rrp, plan_year=2026, percent=Decimal("4"), declared_on=dt.date(2027, 1, 29), actor="t"
    )
    with pytest.raises(BooksError, match="already declared"):
        restoration_declare(
            plan=rrp, plan_year=2026, percent=Decimal("4"), declared_on=dt.date(2027, 2, 1), actor="t"
        )


def cc_account(edcp, years_of_service):
    part = ParticipationFactory(plan=edcp)
    vesting_service_record(person=part.person, through_year=2025, years=years_of_service)
    company_contribution_credit(
        participation=part,
        kind="matching",
        amount=Decimal("4000.00"),
        plan_year=2025,
        on=dt.date(2026, 1, 2),
        actor="test",
    )
    return part, Account.objects.get(participation=part, kind="company_contribution")


def test_company_contributions_vest_after_two_years_of_vesting_service(edcp):
    _, account = cc_account(edcp, 1)
    assert vested_percent(account=account, on=dt.date(2026, 6, 1))[0] == Decimal(0)
    _, account = cc_account(edcp, 2)
    assert vested_percent(account=account, on=dt.date(2026, 6, 1)) == (Decimal(100), "EDCP 4.2")


def test_company_contributions_vest_fully_on_death_while_employed_and_on_a_change_in_control(edcp):
    part, account = cc_account(edcp, 0)
    employment_event_record(
        person=part.person, kind="death", effective_date=dt.date(2026, 5, 1), actor="test"
    )
    assert vested_percent(account=account, on=dt.date(2026, 5, 1))[0] == Decimal(100)
    _, other = cc_account(edcp, 0)
    change_in_control_record(effective_date=dt.date(2026, 7, 1), actor="test")
    assert vested_percent(account=other, on=dt.date(2026, 7, 2))[0] == Decimal(100)


def test_the_unvested_company_contribution_is_forfeited_at_separation(edcp):
    part, account = cc_account(edcp, 1)
    employment_event_record(
        person=part.person,
        kind="separation",
        effective_date=dt.date(2026, 3, 20),
        reason="resignation",
        actor="test",
    )
    forfeiture = Forfeiture.objects.get(account=account)
    assert (forfeiture.amount, forfeiture.percent_vested, forfeiture.cite) == (
        Decimal("4000.00"),
        Decimal(0),
        "EDCP 4.2",
    )
    assert forfeiture.pending.liquidate_all


def test_rrp_2011_matching_vests_after_three_years_and_2017_vests_anyone_who_worked_in_2017(rrp):
    part = ParticipationFactory(plan=rrp, person=PersonFactory(hire_date=dt.date(2014, 6, 1)))
    vesting_service_record(person=part.person, through_year=2015, years=1)
    from books.services.accounts import account_get_or_open

    account = account_get_or_open(participation=part, kind="matching", on=dt.date(2016, 1, 1))
    assert vested_percent(account=account, on=dt.date(2016, 6, 1))[0] == Decimal(0)  # RRP 3.06, 2011: 3 years
    assert vested_percent(account=account, on=dt.date(2017, 1, 3)) == (
        Decimal(100),
        "RRP 3.06(b)",
    )  # 2017 restatement


def test_deferrals_are_always_fully_vested(edcp):
    part = ParticipationFactory(plan=edcp)
    elect(part, 2026, {"base_salary": 10})
    pay_record(
        person=part.person,
        pay_date=dt.date(2026, 1, 15),
        component="base_salary",
        gross=Decimal("1000"),
        actor="test",
    )
    account = Account.objects.get(participation=part)
    assert vested_percent(account=account, on=dt.date(2026, 1, 15))[0] == Decimal(100)
    assert account_value(account=account, on=dt.date(2026, 1, 15)) == Decimal("100.00")
    assert DeferralElection.objects.filter(participation=part).count() == 1
