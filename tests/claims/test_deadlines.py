"""The deadlines as data: read from each plan's claims provision, counted in the plan's time zone."""

from __future__ import annotations

import datetime as dt

import pytest

from claims.selectors import (
    RECEIPT_ALLOWANCE_DAYS,
    appeal_due_on,
    claimant_receives_on,
    decision_due_on,
    extension_notice_by,
    legal_action_until,
    local_date,
    review_due_on,
    rules_for,
)
from plans.models import Plan
from tests.claims.factories import at

pytestmark = pytest.mark.django_db

JAN10 = dt.date(2025, 1, 10)


@pytest.mark.parametrize(
    ("code", "sections"),
    [
        (
            "EDCP",
            {
                "filing": "11.1",
                "denial": "11.2",
                "review": "11.3",
                "decision_on_review": "11.4",
                "legal_action": "11.5",
                "forum": "11.6",
            },
        ),
        (
            "BRP",
            {
                "filing": "7.1",
                "denial": "7.2",
                "review": "7.3",
                "decision_on_review": "7.4",
                "legal_action": "7.5",
                "forum": "7.6",
            },
        ),
        (
            "RRP",
            {
                "filing": "7.01",
                "denial": "7.02",
                "review": "7.03",
                "decision_on_review": "7.04",
                "legal_action": "7.05",
                "forum": "7.06",
            },
        ),
    ],
)
def test_each_plan_cites_its_own_claims_sections(code, sections):
    rules = rules_for(plan=Plan.objects.get(code=code), on=JAN10)
    assert rules.sections == sections
    assert rules.provision_cite == f"{code} {sections['denial']}"


@pytest.mark.parametrize("code", ["EDCP", "BRP", "RRP"])
def test_the_time_limits_come_from_the_plan_provision(code):
    rules = rules_for(plan=Plan.objects.get(code=code), on=JAN10)
    assert (
        rules.decision_days,
        rules.extension_days,
        rules.appeal_days,
        rules.review_days,
        rules.review_extension_days,
        rules.legal_action_years,
    ) == (90, 90, 60, 60, 60, 1)
    assert "Eastern District of Virginia" in rules.forum
    assert str(rules.time_zone) == "America/New_York"


def test_the_decision_is_due_on_day_90_or_day_180_when_extended(edcp):
    rules = rules_for(plan=edcp, on=JAN10)
    assert decision_due_on(received_on=JAN10, rules=rules, extended=False) == dt.date(2025, 4, 10)
    assert decision_due_on(received_on=JAN10, rules=rules, extended=True) == dt.date(2025, 7, 9)
    assert extension_notice_by(received_on=JAN10, rules=rules) == dt.date(2025, 4, 10)


def test_the_appeal_window_is_60_days_from_receipt_of_the_denial(edcp):
    rules = rules_for(plan=edcp, on=JAN10)
    assert RECEIPT_ALLOWANCE_DAYS == {"portal": 0, "mail": 5}
    assert claimant_receives_on(notice_on=dt.date(2025, 3, 3), delivery="portal") == dt.date(2025, 3, 3)
    assert claimant_receives_on(notice_on=dt.date(2025, 3, 3), delivery="mail") == dt.date(2025, 3, 8)
    assert appeal_due_on(received_denial_on=dt.date(2025, 3, 3), rules=rules) == dt.date(2025, 5, 2)
    assert appeal_due_on(received_denial_on=dt.date(2025, 3, 8), rules=rules) == dt.date(2025, 5, 7)


def test_the_review_is_due_on_day_60_or_day_120_when_extended(edcp):
    rules = rules_for(plan=edcp, on=JAN10)
    assert review_due_on(appeal_received_on=dt.date(2025, 4, 1), rules=rules, extended=False) == dt.date(
        2025, 5, 31
    )
    assert review_due_on(appeal_received_on=dt.date(2025, 4, 1), rules=rules, extended=True) == dt.date(
        2025, 7, 30
    )


def test_legal_action_runs_one_year_and_a_february_29_decision_runs_to_february_28(edcp):
    rules = rules_for(plan=edcp, on=JAN10)
    assert legal_action_until(final_determination_on=dt.date(2025, 7, 30), rules=rules) == dt.date(
        2026, 7, 30
    )
    assert legal_action_until(final_determination_on=dt.date(2024, 2, 29), rules=rules) == dt.date(
        2025, 2, 28
    )


def test_a_moment_is_dated_in_the_plans_time_zone_not_in_utc(edcp):
    rules = rules_for(plan=edcp, on=JAN10)
    late_evening = at(2025, 4, 10, 23, 30)  # 03:30 UTC on April 11
    assert late_evening.astimezone(dt.UTC).date() == dt.date(2025, 4, 11)
    assert local_date(moment=late_evening, rules=rules) == dt.date(2025, 4, 10)
    assert local_date(moment=dt.datetime(2025, 4, 11, 4, 30, tzinfo=dt.UTC), rules=rules) == dt.date(
        2025, 4, 11
    )
    with pytest.raises(ValueError, match="time zone"):
        local_date(moment=dt.datetime(2025, 4, 10, 12, 0), rules=rules)  # noqa: DTZ001 - the naive moment is the point
