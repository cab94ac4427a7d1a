"""Investment elections (EDCP 7.4, 7.5, 2.2(b)), BRP annuity forms (4.2(c), 4.2(d)) and the Committee's
cancellation of deferrals (EDCP 3.7)."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest

from books.models import PayrollDeferral
from books.services.payroll import pay_record
from elections.models import Status
from elections.selectors import annuity_in_force, investment_in_force
from elections.services import (
    ElectionError,
    annuity_election_submit,
    deferral_cancel,
    deferral_election_submit,
    investment_election_submit,
)
from participants.services import employment_event_record
from tests.elections.factories import at, default_fund, participant
from tests.factories import FundFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def funds(db):
    sv = default_fund()
    eq = FundFactory(code="EQ", name="Equity Index")
    return sv, eq


def invest(participation, allocation, when=None, applies_to="both"):
    return investment_election_submit(
        participation=participation,
        allocation=allocation,
        applies_to=applies_to,
        submitted_at=when or at(2026, 5, 14, 15),
        channel="portal",
        actor="test",
    )


# --- investments ------------------------------------------------------------------------------------------------


def test_whole_percentages_adding_up_to_100_take_effect_on_the_next_valuation_date(alice, funds):
    sv, eq = funds
    e = invest(alice, {sv.pk: 40, eq.pk: 60}, when=at(2026, 5, 15, 15))  # a Friday
    assert e.accepted and e.effective_on == dt.date(2026, 5, 18)  # the next NYSE session
    assert investment_in_force(participation=alice, as_of=dt.date(2026, 5, 15)).is_default
    in_force = investment_in_force(participation=alice, as_of=dt.date(2026, 5, 18))
    assert sorted((f.code, pct) for f, pct in in_force.lines) == [("EQ", 60), ("SV", 40)]


@pytest.mark.parametrize(
    "shares, words", [((40, 50), "90%"), ((40, "60.5"), "whole percentage"), ((100, -10), "whole")]
)
def test_shares_that_are_not_whole_or_do_not_add_up_are_refused_under_7_4(alice, funds, shares, words):
    sv, eq = funds
    e = invest(alice, {sv.pk: shares[0], eq.pk: shares[1]})
    assert (e.status, e.rule) == (Status.REJECTED, "EDCP 7.4")
    assert words in e.message
    assert not e.lines.exists()


def test_without_an_election_credits_go_to_the_capital_preservation_default_fund(alice, funds):
    sv, _ = funds
    in_force = investment_in_force(participation=alice, as_of=dt.date(2026, 5, 1))
    assert in_force.is_default and in_force.lines == [(sv, 100)] and in_force.cite == "EDCP 7.5"


def test_a_participant_keeps_changing_investments_after_separation(alice, funds):
    sv, eq = funds
    employment_event_record(
        person=alice.person,
        kind="separation",
        effective_date=dt.date(2026, 3, 1),
        reason="resignation",
        actor="test",
        now=at(2026, 3, 1),
    )
    assert invest(alice, {eq.pk: 100}).accepted


def test_a_fund_of_another_plan_is_refused(alice, funds):
    other = FundFactory(plan=participant("RRP").plan, code="RX")
    e = invest(alice, {other.pk: 100})
    assert (e.status, e.rule) == (Status.REJECTED, "EDCP 7.5")


# --- BRP forms of benefit ---------------------------------------------------------------------------------------


@pytest.fixture
def brp(db):
    return participant(
        "BRP", marital_status="married", hire_date=dt.date(1990, 1, 1), birth_date=dt.date(1962, 1, 1)
    )


def annuity(participation, form, years=0, when=None):
    return annuity_election_submit(
        participation=participation,
        form=form,
        defer_years=years,
        submitted_at=when or at(2026, 2, 1),
        channel="portal",
        actor="test",
    )


def test_without_an_election_a_married_participant_gets_the_qualified_joint_and_survivor_annuity(brp):
    current = annuity_in_force(participation=brp, as_of=dt.date(2026, 2, 1))
    assert current.is_default and current.form == "qjsa" and current.cite == "BRP 4.2(c)"
    brp.person.marital_status = "single"
    brp.person.save()
    assert annuity_in_force(participation=brp, as_of=dt.date(2026, 2, 1)).form == "single_life"


def test_switching_between_annuity_forms_takes_effect_at_once(brp):
    e = annuity(brp, "js_75")
    assert e.accepted and not e.is_change and e.takes_effect_on == dt.date(2026, 2, 1)
    assert annuity_in_force(participation=brp, as_of=dt.date(2026, 2, 1)).form == "js_75"


def test_a_form_not_in_4_2_c_is_refused(brp):
    e = annuity(brp, "installments")
    assert (e.status, e.rule) == (Status.REJECTED, "BRP 4.2(c)")


def test_a_change_to_the_lump_sum_must_push_payment_five_years(brp):
    e = annuity(brp, "lump_sum", years=4)
    assert (e.status, e.rule) == (Status.REJECTED, "BRP 4.2(d)")
    assert "at least 5 years" in e.message


def test_a_change_pushing_payment_exactly_five_years_takes_effect_twelve_months_after_it_is_made(brp):
    e = annuity(brp, "lump_sum", years=5)
    assert e.accepted and e.is_change and e.takes_effect_on == dt.date(2027, 2, 1)
    assert annuity_in_force(participation=brp, as_of=dt.date(2027, 1, 31)).form == "qjsa"
    assert annuity_in_force(participation=brp, as_of=dt.date(2027, 2, 1)).form == "lump_sum"


def test_a_change_that_would_take_effect_after_the_benefit_begins_is_refused(brp):
    employment_event_record(
        person=brp.person,
        kind="separation",
        effective_date=dt.date(2026, 6, 10),
        reason="retirement",
        actor="test",
        now=at(2026, 6, 10),
    )
    e = annuity(brp, "lump_sum", years=5, when=at(2026, 6, 20))
    assert (e.status, e.rule) == (Status.REJECTED, "BRP 4.2(d)")
    assert "July 01, 2026" in e.message


# --- cancellation of deferrals (EDCP 3.7) -----------------------------------------------------------------------


def test_an_emergency_cancels_deferrals_for_the_rest_of_that_plan_year(alice):
    c = deferral_cancel(
        participation=alice,
        ground="emergency",
        event_on=dt.date(2026, 5, 20),
        reason="medical bills",
        actor="committee",
        now=at(2026, 5, 20),
    )
    assert (c.starts_on, c.ends_on, c.cite) == (dt.date(2026, 5, 20), dt.date(2026, 12, 31), "EDCP 3.7")


def test_a_hardship_distribution_cancels_through_the_plan_year_of_its_six_month_anniversary(alice):
    c = deferral_cancel(
        participation=alice,
        ground="hardship",
        event_on=dt.date(2026, 8, 3),
        reason="401(k) hardship",
        actor="committee",
        now=at(2026, 8, 4),
    )
    assert c.ends_on == dt.date(2027, 12, 31)


def test_a_plan_without_cancellation_refuses_it(db):
    with pytest.raises(ElectionError) as refused:
        deferral_cancel(
            participation=participant("RRP"),
            ground="emergency",
            event_on=dt.date(2026, 5, 20),
            reason="x",
            actor="committee",
            now=at(2026, 5, 20),
        )
    assert refused.value.rule == "RRP 2.03"


def test_payroll_defers_nothing_while_cancelled_and_needs_a_new_election_afterwards(alice):
    deferral_election_submit(
        participation=alice,
        plan_year=2026,
        percentages={"base_salary": 10},
        accounts=None,
        submitted_at=at(2025, 12, 1),
        channel="portal",
        actor="alice",
    )
    deferral_cancel(
        participation=alice,
        ground="emergency",
        event_on=dt.date(2026, 5, 20),
        reason="medical bills",
        actor="committee",
        now=at(2026, 5, 20),
    )
    pay_record(
        person=alice.person,
        pay_date=dt.date(2026, 6, 15),
        component="base_salary",
        gross=Decimal("5000.00"),
        actor="payroll",
    )
    june = PayrollDeferral.objects.get(record__pay_date=dt.date(2026, 6, 15))
    assert june.deferral == 0 and "EDCP 3.7" in june.reason
    pay_record(
        person=alice.person,
        pay_date=dt.date(2027, 1, 15),
        component="base_salary",
        gross=Decimal("5000.00"),
        actor="payroll",
    )
    # EDCP 3.1(c): the evergreen election does not come back by itself.
    assert PayrollDeferral.objects.get(record__pay_date=dt.date(2027, 1, 15)).deferral == 0


def test_brp_4_2_b_an_election_made_in_2007_is_the_initial_election_and_a_lump_sum_stands_as_made(brp):
    e = annuity(brp, "lump_sum", when=at(2007, 11, 15))
    assert e.accepted and not e.is_change and e.takes_effect_on == dt.date(2007, 11, 15)
    assert annuity_in_force(participation=brp, as_of=dt.date(2026, 2, 1)).form == "lump_sum"


def test_brp_4_2_b_an_election_within_30_days_of_becoming_a_participant_stands_as_made(brp):
    brp.entered_on = dt.date(2008, 1, 1)
    brp.save()
    assert annuity(brp, "lump_sum", when=at(2008, 1, 31)).accepted  # day 30: the initial election
    e = annuity(
        brp, "js_100", years=0, when=at(2008, 2, 1)
    )  # day 31: leaving the lump sum is a 4.2(d) change
    assert (e.status, e.rule) == (Status.REJECTED, "BRP 4.2(d)")
    assert annuity_in_force(participation=brp, as_of=dt.date(2026, 2, 1)).form == "lump_sum"


def test_brp_4_2_d_a_lump_sum_elected_after_the_initial_window_is_a_change(brp):
    brp.entered_on = dt.date(2008, 1, 1)
    brp.save()
    e = annuity(brp, "lump_sum", when=at(2008, 2, 1))  # day 31 after becoming a Participant
    assert (e.status, e.rule) == (Status.REJECTED, "BRP 4.2(d)")
    e = annuity(brp, "lump_sum", when=at(2008, 1, 15))
    assert e.accepted and not e.is_change
