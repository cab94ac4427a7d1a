"""The simulator's shortcut (the payment job asks the database only on event days and on the days work can
fall due) never skips a day on which work falls due: emergency approvals, orders, holds released, Key
Employee waits ending, annuity months. FORMAT.md: `paid_on` is the first Valuation Date on or after the
Payment Date."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest
from django.conf import settings

from core import valuation_calendar as cal
from operations.simulation.runner import check_result, run_scenario
from operations.simulation.sandbox import rolled_back
from operations.simulation.scenario import load_scenario, parse_scenario
from payments.services.processing import annuity_due_from
from tests.payments.factories import deferrals, scenario

SCENARIOS = Path(settings.BASE_DIR) / "scenarios"


def emergency_after_the_last_event(approved_on: str) -> dict:
    """Six pays from January 2026, then one emergency request in April approved long after every other event."""
    events = deferrals(pays=6) + [
        {
            "on": "2026-04-01",
            "type": "emergency_request",
            "participant": "P1",
            "amount": "5000.00",
            "approved_on": approved_on,
        }
    ]
    return scenario(events=events, through="2026-12-31")


@pytest.mark.django_db
@pytest.mark.parametrize(
    "approved_on, paid_on",
    [
        ("2026-10-09", "2026-10-09"),  # a Friday: a Valuation Date
        ("2026-10-10", "2026-10-12"),  # a Saturday: released the Monday after
    ],
)
def test_an_emergency_approved_after_the_last_other_event_is_paid_on_the_first_valuation_date_on_or_after_it(
    approved_on, paid_on
):
    data = emergency_after_the_last_event(approved_on)
    with rolled_back():
        result = run_scenario(parse_scenario(data), shortcut=True)
    # P1 is still employed: the only payment is the emergency one (EDCP 5.5).
    assert [(p["payment_date"], p["paid_on"], p["amount"]) for p in result["payments"]] == [
        (approved_on, paid_on, "5000.00")
    ]
    assert paid_on == cal.next_valuation_date(dt.date.fromisoformat(approved_on)).isoformat()


def test_an_annuity_is_extended_in_the_month_its_payments_come_within_the_twelve_month_horizon():
    # Planned through May 1, 2027: the horizon (the 1st of the month twelve months ahead) passes it on June 1, 2026.
    assert annuity_due_from(scheduled_through=dt.date(2027, 5, 1)) == dt.date(2026, 6, 1)
    # Planned through the 15th: the same month, not the 15th (a day-of-month subtraction would be two weeks late).
    assert annuity_due_from(scheduled_through=dt.date(2027, 5, 15)) == dt.date(2026, 6, 1)
    assert annuity_due_from(scheduled_through=dt.date(2027, 2, 28)) == dt.date(2026, 3, 1)


@pytest.mark.django_db
def test_check_reports_a_payment_not_paid_on_the_first_valuation_date_on_or_after_its_payment_date():
    data = emergency_after_the_last_event("2026-10-10")
    late = {
        "participant": "P1",
        "account": "retirement_termination",
        "payment_date": "2026-10-10",
        "paid_on": "2026-11-02",
        "amount": "5000.00",
    }
    problems = check_result(parse_scenario(data), {"events": [], "payments": [late], "balances": {}})
    assert problems == [
        "payment P1 retirement_termination 2026-10-10: paid on 2026-11-02, expected 2026-10-12 "
        "(the first Valuation Date on or after the Payment Date)"
    ]


@pytest.mark.slow
@pytest.mark.django_db
@pytest.mark.parametrize(
    "name",
    [
        "payments_edcp_cic_emergency_orders.json",  # emergency approvals, domestic relations orders
        "payments_edcp_dates_death_key.json",  # Key Employee waits ending, a death
        "brp_annuities_key_employee_and_death.json",  # annuity months, a Key Employee's catch-up payment
        "generated/gen_42_000_edcp.json",  # the emergency paid late on PostgreSQL (issue 9)
        "payments_rrp_residual_after_lump_sum.json",  # money credited after a benefit paid in full reopens it
    ],
)
def test_the_shortcut_gives_the_same_result_as_looking_every_day(name):
    sc = load_scenario(SCENARIOS / name)
    with rolled_back():
        every_day = run_scenario(sc, shortcut=False)
    with rolled_back():
        shortcut = run_scenario(sc, shortcut=True)
    assert shortcut == every_day
