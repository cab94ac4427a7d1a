"""Enrollment windows: never past the plan's deadline; with windows, an election outside them is refused;
without any (the simulator), only the plan's deadlines apply."""

from __future__ import annotations

import datetime as dt

import pytest

from elections.models import EnrollmentWindow, Status
from elections.selectors import election_chances
from elections.services import (
    ElectionError,
    deferral_election_submit,
    eligibility_notice_send,
    enrollment_window_cancel,
    enrollment_window_open,
)
from plans.models import Plan
from tests.elections.factories import at, participant

pytestmark = pytest.mark.django_db


def open_window(plan_code="EDCP", year=2027, opens=None, closes=None, **kw):
    return enrollment_window_open(
        plan=Plan.objects.get(code=plan_code),
        plan_year=year,
        opens_at=opens or at(year - 1, 11, 1, 9),
        closes_at=closes or at(year - 1, 11, 30, 17),
        actor="committee",
        now=at(year - 1, 10, 1),
        **kw,
    )


def elect(participation, when, plan_year=2027, percentages=None, period=None):
    return deferral_election_submit(
        participation=participation,
        plan_year=plan_year,
        percentages=percentages or {"base_salary": 10},
        accounts=None,
        performance_period=period,
        submitted_at=when,
        channel="portal",
        actor="test",
    )


def test_a_window_may_close_at_the_last_minute_of_december_31_eastern(db):
    w = open_window(closes=at(2026, 12, 31, 23, 59, 59))
    assert w.closes_at == at(2026, 12, 31, 23, 59, 59)


def test_a_window_closing_after_the_plan_deadline_is_refused_citing_3_2_b(db):
    with pytest.raises(ElectionError) as refused:
        open_window(closes=at(2027, 1, 1, 0, 0))
    assert refused.value.rule == "EDCP 3.2(b)"
    assert "December 31, 2026 at 11:59 PM Eastern" in refused.value.message


def test_an_rrp_window_closing_after_the_plan_deadline_is_refused_citing_2_03_b(db):
    with pytest.raises(ElectionError) as refused:
        open_window("RRP", closes=at(2027, 1, 2, 9, 0))
    assert refused.value.rule == "RRP 2.03(b)"


def test_a_plan_without_deferrals_has_no_windows(db):
    with pytest.raises(ElectionError) as refused:
        open_window("BRP")
    assert refused.value.rule == "BRP 3.2"


def test_with_no_window_recorded_only_the_plan_deadline_applies(alice):
    assert not EnrollmentWindow.objects.exists()
    assert elect(alice, at(2026, 12, 31, 23, 59)).status == Status.ACCEPTED


def test_with_a_window_open_an_election_inside_it_is_accepted_and_irrevocable_when_it_closes(alice):
    w = open_window()
    e = elect(alice, at(2026, 11, 15))
    assert e.status == Status.ACCEPTED
    assert e.window == w and e.irrevocable_at == w.closes_at


def test_with_a_window_an_election_after_it_closed_is_refused_though_before_december_31(alice):
    open_window()
    e = elect(alice, at(2026, 12, 15))
    assert e.status == Status.REJECTED and e.rule == "EDCP 3.2(b)"
    assert "outside its enrollment window" in e.message


def test_with_a_window_an_election_before_it_opens_is_refused_and_says_when_it_opens(alice):
    open_window()
    e = elect(alice, at(2026, 10, 20))
    assert e.status == Status.REJECTED and e.rule == "EDCP 3.2(b)"
    assert "The next window opens November 1, 2026 at 9:00 AM Eastern" in e.message


def test_windows_of_one_plan_year_do_not_govern_another(alice):
    open_window(year=2027)
    assert elect(alice, at(2026, 12, 20), plan_year=2027).status == Status.REJECTED
    assert elect(alice, at(2026, 12, 20), plan_year=2028).status == Status.ACCEPTED


def test_an_election_is_changeable_until_the_window_closes(alice):
    open_window()
    first = elect(alice, at(2026, 11, 2), percentages={"base_salary": 10})
    second = elect(alice, at(2026, 11, 29), percentages={"base_salary": 15})
    first.refresh_from_db()
    assert first.status == Status.SUPERSEDED and second.status == Status.ACCEPTED


def test_the_notice_of_eligibility_opens_a_thirty_day_first_year_window(alice):
    eligibility_notice_send(
        participation=alice, notice_on=dt.date(2026, 3, 2), actor="committee", now=at(2026, 3, 2, 9)
    )
    alice.refresh_from_db()
    w = EnrollmentWindow.objects.get(kind=EnrollmentWindow.Kind.FIRST_YEAR)
    assert alice.eligible_on == dt.date(2026, 3, 2) and w.participation == alice
    assert w.closes_at.astimezone(at(2026, 1, 1).tzinfo).date() == dt.date(2026, 4, 1)
    e = elect(alice, at(2026, 4, 1, 23, 0), plan_year=2026)
    assert e.status == Status.ACCEPTED and e.window == w


def test_a_second_notice_on_another_date_is_refused(alice):
    eligibility_notice_send(
        participation=alice, notice_on=dt.date(2026, 3, 2), actor="committee", now=at(2026, 3, 2, 9)
    )
    with pytest.raises(ElectionError) as refused:
        eligibility_notice_send(
            participation=alice, notice_on=dt.date(2026, 5, 2), actor="committee", now=at(2026, 5, 2, 9)
        )
    assert refused.value.rule == "EDCP 3.2(a)"


PERIOD = (dt.date(2026, 1, 1), dt.date(2026, 12, 31))


def test_a_performance_window_may_run_until_six_months_before_the_period_ends_and_no_later(db):
    w = open_window(
        year=2026,
        kind="performance",
        performance_period=PERIOD,
        opens=at(2026, 3, 1),
        closes=at(2026, 6, 30, 23, 59),
    )
    assert w.closes_at == at(2026, 6, 30, 23, 59)
    with pytest.raises(ElectionError) as refused:
        open_window(
            year=2026,
            kind="performance",
            performance_period=PERIOD,
            opens=at(2026, 3, 1),
            closes=at(2026, 7, 1, 0, 0),
        )
    assert refused.value.rule == "EDCP 3.2(c)"


def test_performance_elections_outside_the_committees_performance_window_are_refused(alice):
    open_window(
        year=2026, kind="performance", performance_period=PERIOD, opens=at(2026, 3, 1), closes=at(2026, 5, 31)
    )
    inside = elect(alice, at(2026, 4, 1), plan_year=2026, percentages={"annual_bonus": 40}, period=PERIOD)
    after = elect(alice, at(2026, 6, 15), plan_year=2026, percentages={"annual_bonus": 50}, period=PERIOD)
    other = elect(
        alice,
        at(2026, 4, 1),
        plan_year=2026,
        percentages={"annual_bonus": 50},
        period=(dt.date(2026, 2, 1), dt.date(2027, 1, 31)),
    )
    assert inside.status == Status.ACCEPTED and inside.irrevocable_at == at(2026, 5, 31)
    assert (after.status, after.rule) == (Status.REJECTED, "EDCP 3.2(c)")
    assert (other.status, other.rule) == (Status.REJECTED, "EDCP 3.2(c)")
    assert "has not opened elections for a performance period" in other.message


def test_a_window_can_be_withdrawn_only_before_it_opens(db):
    w = open_window()
    with pytest.raises(ElectionError):
        enrollment_window_cancel(window=w, actor="committee", now=at(2026, 11, 2))
    enrollment_window_cancel(window=w, actor="committee", now=at(2026, 10, 2))
    assert not EnrollmentWindow.objects.exists()


def test_the_participant_sees_the_open_window_and_its_close(alice):
    w = open_window()
    chances = election_chances(participation=alice, now=at(2026, 11, 15))
    assert [(c.plan_year, c.kind, c.closes_at) for c in chances] == [(2027, "annual", w.closes_at)]
    later = election_chances(participation=alice, now=at(2026, 12, 15))
    assert later == []


def test_without_windows_the_participant_sees_the_plan_deadline(alice):
    chances = election_chances(participation=alice, now=at(2026, 11, 15))
    assert [(c.plan_year, c.kind) for c in chances] == [(2027, "annual")]
    assert chances[0].closes_at == at(2026, 12, 31, 23, 59, 59).replace(microsecond=999999)


def test_a_participant_who_is_not_eligible_is_offered_nothing(db):
    p = participant()
    p.eligible = False
    p.save()
    assert election_chances(participation=p, now=at(2026, 11, 15)) == []


def test_an_election_irrevocable_when_its_window_closed_is_not_replaced_in_a_later_window(alice, bob):
    open_window(opens=at(2026, 11, 1), closes=at(2026, 11, 15))
    open_window(opens=at(2026, 12, 1), closes=at(2026, 12, 15))
    first = elect(alice, at(2026, 11, 5))
    again = elect(alice, at(2026, 12, 5), percentages={"base_salary": 30})
    assert first.status == Status.ACCEPTED
    assert (again.status, again.rule) == (Status.REJECTED, "EDCP 3.2(b)")
    assert "became irrevocable on November 15, 2026" in again.message
    assert (
        elect(bob, at(2026, 12, 5)).status == Status.ACCEPTED
    )  # who did not elect in the first may in the second
