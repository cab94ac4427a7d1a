"""Issue 11: on the portal calendar, a balance with no scheduled payment says why (from the schedule engine), not a
blank: paid after leaving the company as elected, on hold and why, a Specified Date, a residual."""

from __future__ import annotations

import datetime as dt

import pytest

from participants.models import Person
from payments.models import PaymentSchedule
from payments.selectors import _why_unscheduled, unscheduled_balances
from payments.services.engine import Planned, ScheduleResult
from tests.payments.factories import deferrals, scenario, simulate
from tests.payments.test_views import _participant_client


@pytest.mark.django_db
def test_an_employed_participants_balance_says_it_is_paid_after_leaving_as_elected(client):
    people = {p: {"birth_date": "1968-04-10", "hire_date": "2012-03-01"} for p in ("P1", "P2")}
    events = (
        deferrals("P1", gross="20000.00", form="installments", installments=5)
        + deferrals("P2", gross="12000.00")
        + [{"on": "2026-04-10", "type": "separation", "participant": "P2", "reason": "resignation"}]
    )
    simulate(scenario(participants=people, events=events, through="2026-05-08"))
    on = dt.date(2026, 5, 8)
    [p1] = unscheduled_balances(person=Person.objects.get(employee_number="P1"), on=on)
    assert p1.balance > 0 and p1.account_label == "Retirement/Termination Account"
    assert (
        p1.why == "Paid after you leave the company, in 5 annual installments, on the dates of your election."
    )
    assert p1.cite.startswith("EDCP 5.1") and "15th of the month after separation" in p1.detail
    # P2 separated: the lump sum is scheduled, so nothing to explain
    assert unscheduled_balances(person=Person.objects.get(employee_number="P2"), on=on) == []
    page = _participant_client(client, "P1").get("/portal/payments/").content.decode()
    assert 'id="unscheduled"' in page and "Paid after you leave the company, in 5 annual installments" in page
    assert "see below why" in page  # the empty calendar points to the reason, not a blank


def _planned(day: dt.date) -> Planned:
    return Planned(
        trigger="specified_date",
        benefit="Specified Date Benefit",
        kind="lump_sum",
        number=1,
        of=1,
        share="all",
        payment_date=day,
        valuation_rule="end_of_month_before_payment",
        valued_as_of=None,
        cite="EDCP 5.2(b)",
        reason="the 15th of the specified month",
    )


def test_the_other_reasons_on_hold_a_specified_date_and_a_residual():
    held = _why_unscheduled(
        ScheduleResult(
            benefit="X", cite="EDCP 5.1", hold_reason="No Key Employee list is recorded for 2026."
        ),
        None,
        False,
    )
    assert held[0] == "On hold: No Key Employee list is recorded for 2026."
    stored_hold = PaymentSchedule(hold_reason="A domestic relations order is being reviewed.")
    assert _why_unscheduled(ScheduleResult(), stored_hold, False)[0].startswith("On hold: A domestic")
    sd = ScheduleResult(trigger="specified_date", cite="EDCP 5.2", payments=[_planned(dt.date(2029, 3, 15))])
    why, _detail, cite = _why_unscheduled(sd, None, False)
    assert (
        why.startswith("Specified Date 2029-03: the first payment is on March 15, 2029")
        and cite == "EDCP 5.2(b)"
    )
    assert "residual" in _why_unscheduled(sd, None, True)[0]
    assert _why_unscheduled(ScheduleResult(), None, False)[0].startswith("No payment date is set")
