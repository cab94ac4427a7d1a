"""Deferral elections: each rule at its boundary, and bad input refused with its section, nothing in force."""

from __future__ import annotations

import datetime as dt

import pytest

from elections.models import DeferralElection, DeferralElectionLine, Status
from elections.selectors import deferral_election_in_force, deferral_line_in_force
from elections.services import deferral_election_stop, deferral_election_submit, distribution_election_submit
from participants.services import employment_event_record
from tests.elections.factories import UTC, at, participant, set_provision

pytestmark = pytest.mark.django_db


def elect(participation, percentages, *, when, plan_year=2027, accounts=None, period=None):
    return deferral_election_submit(
        participation=participation,
        plan_year=plan_year,
        percentages=percentages,
        accounts=accounts,
        performance_period=period,
        submitted_at=when,
        channel="portal",
        actor="test",
    )


def assert_refused(election, rule: str):
    assert election.status == Status.REJECTED
    assert election.rule == rule
    assert election.message.endswith(".") and len(election.message.split()) >= 6
    assert not DeferralElectionLine.objects.filter(election=election).exists()
    assert election.irrevocable_at is None


def nothing_in_force(participation, plan_year=2027):
    return deferral_election_in_force(participation=participation, plan_year=plan_year) is None


# --- the annual deadline: 11:59 pm Eastern, December 31 ------------------------------------------------------------


def test_an_election_in_the_last_minute_of_december_31_eastern_is_accepted(alice):
    # 23:59:30 EST on Dec 31 is 04:59:30 UTC on Jan 1: the deadline is read in Eastern time.
    e = elect(alice, {"base_salary": 10}, when=dt.datetime(2027, 1, 1, 4, 59, 30, tzinfo=UTC))
    assert e.status == Status.ACCEPTED
    assert e.irrevocable_at == at(2026, 12, 31, 23, 59, 59).replace(microsecond=999999)


def test_an_election_at_midnight_eastern_on_january_1_is_refused_under_3_2_b(alice):
    e = elect(alice, {"base_salary": 10}, when=dt.datetime(2027, 1, 1, 5, 0, 0, tzinfo=UTC))
    assert_refused(e, "EDCP 3.2(b)")
    assert "December 31, 2026" in e.message
    assert "2028" in e.message  # what would be accepted instead
    assert nothing_in_force(alice)


def test_the_rrp_deadline_is_the_same_minute_and_cites_2_03_b(db):
    p = participant("RRP")
    ok = elect(p, {"plan_compensation": 10}, when=at(2026, 12, 31, 23, 59))
    late = elect(p, {"plan_compensation": 12}, when=at(2027, 1, 1, 0, 0))
    assert ok.status == Status.ACCEPTED
    assert_refused(late, "RRP 2.03(b)")


# --- percentages ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "value, rule, words",
    [
        ("10.5", "EDCP 1.12", "not a whole number"),
        ("76", "EDCP 1.12", "at most 75%"),
        ("-5", "EDCP 1.12", "cannot be negative"),
        ("ten", "EDCP 1.12", "not a whole number"),
    ],
)
def test_a_base_salary_percentage_that_is_not_whole_over_the_cap_or_negative_is_refused(
    alice, value, rule, words
):
    e = elect(alice, {"base_salary": value}, when=at(2026, 11, 1))
    assert_refused(e, rule)
    assert words in e.message
    assert e.request_data["percentages"]["base_salary"] == value  # kept for the audit trail
    assert nothing_in_force(alice)


def test_performance_based_compensation_may_be_deferred_up_to_ninety_percent(alice):
    assert elect(alice, {"annual_bonus": 90}, when=at(2026, 11, 1)).status == Status.ACCEPTED
    assert_refused(elect(alice, {"annual_bonus": 91}, when=at(2026, 11, 2)), "EDCP 1.12")


def test_pay_the_plan_does_not_defer_is_refused_naming_what_can_be_deferred(alice):
    e = elect(alice, {"commission": 10}, when=at(2026, 11, 1))
    assert_refused(e, "EDCP 1.12")
    assert "base salary" in e.message


def test_rrp_2017_caps_plan_compensation_at_75_percent(db):
    p = participant("RRP")
    assert_refused(elect(p, {"plan_compensation": 76}, when=at(2026, 11, 1)), "RRP 2.03(a)")


# --- allocation to accounts ----------------------------------------------------------------------------------------


def test_account_shares_that_do_not_add_up_to_100_are_refused(alice):
    e = elect(
        alice,
        {"base_salary": 10},
        when=at(2026, 11, 1),
        accounts={"retirement_termination": 50, "specified_date:2031-03": 40},
    )
    assert_refused(e, "EDCP 3.3")
    assert "90%" in e.message


def test_a_sixth_specified_date_account_is_refused(alice):
    months = ["2030-03", "2031-03", "2032-03", "2033-03", "2034-03"]
    first = elect(
        alice,
        {"base_salary": 10},
        when=at(2026, 11, 1),
        plan_year=2027,
        accounts={f"specified_date:{m}": 20 for m in months},
    )
    assert first.status == Status.ACCEPTED
    sixth = elect(
        alice,
        {"base_salary": 10},
        when=at(2027, 11, 1),
        plan_year=2028,
        accounts={"retirement_termination": 50, "specified_date:2035-03": 50},
    )
    assert_refused(sixth, "EDCP 1.32")
    assert "at most 5" in sixth.message and "2030-03" in sixth.message
    # Reusing one of the five is fine.
    again = elect(
        alice,
        {"base_salary": 10},
        when=at(2027, 11, 2),
        plan_year=2028,
        accounts={"retirement_termination": 50, "specified_date:2034-03": 50},
    )
    assert again.status == Status.ACCEPTED


def test_a_replacement_in_the_same_plan_year_frees_the_accounts_it_replaces(alice):
    elect(
        alice,
        {"base_salary": 10},
        when=at(2026, 11, 1),
        accounts={f"specified_date:{y}-03": 20 for y in range(2030, 2035)},
    )
    e = elect(
        alice,
        {"base_salary": 10},
        when=at(2026, 11, 2),
        accounts={f"specified_date:{y}-06": 20 for y in range(2030, 2035)},
    )
    assert e.status == Status.ACCEPTED


def test_a_specified_date_in_the_past_is_refused(alice):
    e = elect(
        alice,
        {"base_salary": 10},
        when=at(2026, 11, 1),
        accounts={"retirement_termination": 50, "specified_date:2025-06": 50},
    )
    assert_refused(e, "EDCP 5.2")


def test_a_specified_date_inside_the_plan_year_of_the_deferrals_is_refused(alice):
    e = elect(alice, {"base_salary": 10}, when=at(2026, 11, 1), accounts={"specified_date:2027-06": 100})
    assert_refused(e, "EDCP 5.2")
    assert "2028 or later" in e.message


def test_the_2024_minimum_deferral_period_applies_once_the_committee_sets_it(db):
    set_provision("EDCP", "specified_date_min_deferral_years", 3, effective="2024-08-01")
    p = participant()
    early = elect(p, {"base_salary": 10}, when=at(2026, 11, 1), accounts={"specified_date:2029-03": 100})
    assert_refused(early, "EDCP 3.4")
    assert "3rd plan year" in early.message and "2030 or later" in early.message
    assert elect(
        p, {"base_salary": 10}, when=at(2026, 11, 2), accounts={"specified_date:2030-03": 100}
    ).accepted


def test_without_the_committee_setting_it_there_is_no_minimum_deferral_period(alice):
    assert elect(
        alice, {"base_salary": 10}, when=at(2026, 11, 1), accounts={"specified_date:2028-03": 100}
    ).accepted


# --- eligibility ---------------------------------------------------------------------------------------------------


def test_an_election_by_a_participant_who_is_no_longer_eligible_is_refused(alice):
    alice.eligible = False
    alice.save()
    assert_refused(elect(alice, {"base_salary": 10}, when=at(2026, 11, 1)), "EDCP 2.1")


def test_an_election_after_separation_is_refused(alice):
    employment_event_record(
        person=alice.person,
        kind="separation",
        effective_date=dt.date(2026, 10, 1),
        reason="resignation",
        actor="test",
        now=at(2026, 10, 1),
    )
    assert_refused(elect(alice, {"base_salary": 10}, when=at(2026, 11, 1)), "EDCP 2.1")


# --- first year of eligibility: 30 days after the notice -----------------------------------------------------------


def test_day_30_after_the_notice_of_eligibility_is_still_inside_the_first_year_window(alice):
    alice.eligible_on = dt.date(2026, 3, 2)
    alice.save()
    e = elect(alice, {"base_salary": 10}, when=at(2026, 4, 1, 23, 59), plan_year=2026)
    assert e.status == Status.ACCEPTED
    assert e.kind == DeferralElection.Kind.FIRST_YEAR
    assert e.irrevocable_at.astimezone(at(2026, 1, 1).tzinfo).date() == dt.date(2026, 4, 1)
    assert e.covers_pay_from == dt.date(2026, 4, 2)  # EDCP 3.2(a): pay earned after it becomes irrevocable


def test_day_31_after_the_notice_of_eligibility_is_refused_under_3_2_a(alice):
    alice.eligible_on = dt.date(2026, 3, 2)
    alice.save()
    e = elect(alice, {"base_salary": 10}, when=at(2026, 4, 2, 0, 0, 30), plan_year=2026)
    assert_refused(e, "EDCP 3.2(a)")
    assert "April 01, 2026" in e.message and "2027" in e.message


def test_a_first_year_election_covers_only_pay_earned_after_it_becomes_irrevocable(alice):
    alice.eligible_on = dt.date(2026, 3, 2)
    alice.save()
    elect(alice, {"base_salary": 10}, when=at(2026, 3, 10), plan_year=2026)
    before = deferral_line_in_force(
        participation=alice,
        component="base_salary",
        plan_year=2026,
        pay_date=dt.date(2026, 4, 15),
        period_start=dt.date(2026, 4, 1),
    )
    after = deferral_line_in_force(
        participation=alice,
        component="base_salary",
        plan_year=2026,
        pay_date=dt.date(2026, 4, 30),
        period_start=dt.date(2026, 4, 16),
    )
    assert before is None and after.percent == 10


def test_a_participant_notified_in_march_still_elects_for_next_year_by_december_31(alice):
    alice.eligible_on = dt.date(2026, 3, 2)
    alice.save()
    e = elect(alice, {"base_salary": 10}, when=at(2026, 11, 15), plan_year=2027)
    assert e.status == Status.ACCEPTED and e.kind == DeferralElection.Kind.ANNUAL


# --- Performance-Based Compensation: six months before the period ends ---------------------------------------------

PERIOD = (dt.date(2026, 1, 1), dt.date(2026, 12, 31))


def test_a_performance_election_exactly_six_months_before_the_period_ends_is_accepted(alice):
    # June 30, 23:59 EDT is July 1, 03:59 UTC: the deadline is the whole of June 30 in Eastern time.
    e = elect(
        alice,
        {"annual_bonus": 50},
        when=dt.datetime(2026, 7, 1, 3, 59, tzinfo=UTC),
        plan_year=2026,
        period=PERIOD,
    )
    assert e.status == Status.ACCEPTED and e.kind == DeferralElection.Kind.PERFORMANCE


def test_a_performance_election_the_day_after_is_refused_under_3_2_c(alice):
    e = elect(alice, {"annual_bonus": 50}, when=at(2026, 7, 1, 0, 0), plan_year=2026, period=PERIOD)
    assert_refused(e, "EDCP 3.2(c)")


def test_a_performance_period_shorter_than_twelve_months_is_refused(alice):
    e = elect(
        alice,
        {"annual_bonus": 50},
        when=at(2026, 2, 1),
        plan_year=2026,
        period=(dt.date(2026, 1, 1), dt.date(2026, 9, 30)),
    )
    assert_refused(e, "EDCP 1.24")
    assert "at least 12 months" in e.message


def test_only_those_employed_since_the_performance_period_began_may_elect_under_it(db):
    late_hire = participant(hire_date=dt.date(2026, 2, 1))
    e = elect(late_hire, {"annual_bonus": 50}, when=at(2026, 3, 1), plan_year=2026, period=PERIOD)
    assert_refused(e, "EDCP 3.2(c)")
    assert "continuously" in e.message


def test_a_break_in_employment_during_the_period_bars_a_performance_election(alice):
    employment_event_record(
        person=alice.person,
        kind="separation",
        effective_date=dt.date(2026, 2, 1),
        reason="resignation",
        actor="test",
        now=at(2026, 2, 1),
    )
    employment_event_record(
        person=alice.person,
        kind="rehire",
        effective_date=dt.date(2026, 3, 1),
        actor="test",
        now=at(2026, 3, 1),
    )
    assert_refused(
        elect(alice, {"annual_bonus": 50}, when=at(2026, 4, 1), plan_year=2026, period=PERIOD), "EDCP 3.2(c)"
    )


def test_only_performance_based_pay_may_be_elected_by_performance_period(alice):
    e = elect(
        alice, {"annual_bonus": 50, "base_salary": 10}, when=at(2026, 4, 1), plan_year=2026, period=PERIOD
    )
    assert_refused(e, "EDCP 3.2(c)")


# --- changeable until the deadline, then irrevocable; evergreen ------------------------------------------------------


def test_a_new_election_before_the_deadline_replaces_the_earlier_one(alice):
    first = elect(alice, {"base_salary": 10}, when=at(2026, 12, 1))
    second = elect(alice, {"base_salary": 20}, when=at(2026, 12, 15))
    first.refresh_from_db()
    assert first.status == Status.SUPERSEDED and second.status == Status.ACCEPTED
    assert deferral_election_in_force(participation=alice, plan_year=2027) == second


def test_after_the_deadline_the_election_can_no_longer_be_changed(alice):
    kept = elect(alice, {"base_salary": 10}, when=at(2026, 12, 1))
    late = elect(alice, {"base_salary": 30}, when=at(2027, 1, 5))
    kept.refresh_from_db()
    assert kept.status == Status.ACCEPTED and late.status == Status.REJECTED
    assert deferral_election_in_force(participation=alice, plan_year=2027) == kept


def test_an_election_stays_in_force_for_later_years_until_replaced(alice):
    e = elect(alice, {"base_salary": 10}, when=at(2026, 12, 1))
    line = deferral_line_in_force(
        participation=alice, component="base_salary", plan_year=2029, pay_date=dt.date(2029, 5, 15)
    )
    assert line.election == e


def test_stopping_in_time_revokes_the_evergreen_election_for_the_next_year(alice):
    elect(alice, {"base_salary": 10, "monthly_bonus": 5}, when=at(2026, 12, 1))
    stop = deferral_election_stop(
        participation=alice,
        plan_year=2028,
        submitted_at=at(2027, 12, 31, 23, 0),
        channel="portal",
        actor="test",
    )
    assert stop.accepted
    line = deferral_line_in_force(
        participation=alice, component="monthly_bonus", plan_year=2028, pay_date=dt.date(2028, 2, 15)
    )
    assert line.percent == 0


def test_a_payment_schedule_cannot_be_chosen_anew_once_the_first_deferral_election_into_it_is_irrevocable(
    alice,
):
    elect(alice, {"base_salary": 10}, when=at(2026, 12, 1))
    e = distribution_election_submit(
        participation=alice,
        account="retirement_termination",
        form="installments",
        installments=5,
        lump_sum_percent=None,
        submitted_at=at(2027, 1, 10),
        channel="portal",
        actor="test",
    )
    assert e.status == Status.REJECTED and e.rule == "EDCP 6.1"
    before = distribution_election_submit(
        participation=alice,
        account="retirement_termination",
        form="installments",
        installments=5,
        lump_sum_percent=None,
        submitted_at=at(2026, 12, 20),
        channel="portal",
        actor="test",
    )
    assert before.accepted
    assert before.irrevocable_at == at(2026, 12, 31, 23, 59, 59).replace(microsecond=999999)


def test_a_first_year_election_before_the_notice_of_eligibility_is_refused(alice):
    alice.eligible_on = dt.date(2026, 6, 15)
    alice.save()
    e = elect(alice, {"base_salary": 10}, when=at(2026, 6, 14, 16), plan_year=2026)
    assert_refused(e, "EDCP 3.2(a)")
    assert "June 15, 2026" in e.message


def test_rrp_2011_holds_elections_to_the_maximum_the_committee_announced(db):
    from plans.models import PlanTable

    p = participant("RRP")
    table = PlanTable.objects.get(plan=p.plan, code="announced_max_deferral_percent")
    table.rows = [["default", "75"], ["2015", "50"]]
    table.save()
    over = elect(p, {"plan_compensation": 51}, when=at(2014, 11, 1), plan_year=2015)
    assert_refused(over, "RRP 2.03(a)")
    assert "at most 50%" in over.message
    assert elect(p, {"plan_compensation": 50}, when=at(2014, 11, 2), plan_year=2015).accepted
