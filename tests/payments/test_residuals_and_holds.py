"""No vested balance is stranded after a benefit is paid in full (payments.services.residuals), and a payment
whose valuation date cannot be credited for want of a fund price is held on the work queue.

P1 defers 50% of six 10,000.00 pays: 30,000.00 (3,000 units at 10.00) in the Retirement/Termination Account.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest

from participants.models import Person
from payments.models import PaymentSchedule, ScheduledPayment
from payments.services.processing import payment_day_process
from tests.payments.factories import advance, deferrals, scenario, simulate

pytestmark = pytest.mark.django_db


def sep(on: str) -> dict:
    return {"on": on, "type": "separation", "participant": "P1", "reason": "resignation"}


def test_earnings_left_by_a_final_lump_sum_fixed_at_its_valuation_date_are_paid_as_a_residual_the_next_valuation_date():
    # 5.7: 30,000.00 valued April 30; on May 15 the price is 12.00: 2,500 units sold, 500 (6,000.00) left.
    result = simulate(
        scenario(
            events=deferrals() + [sep("2026-04-10")],
            through="2026-05-29",
            prices=[["2010-01-04", "10.00"], ["2026-05-01", "12.00"]],
            checkpoints=["2026-05-15"],
        )
    )
    assert [
        (r["trigger"], r["payment_date"], r["paid_on"], r["valued_as_of"], r["amount"], r["cite"])
        for r in result["payments"]
    ] == [
        ("small_balance", "2026-05-15", "2026-05-15", "2026-04-30", "30000.00", "EDCP 5.7"),
        ("residual", "2026-05-18", "2026-05-18", "2026-05-18", "6000.00", "EDCP 5.7"),
    ]
    assert result["balances"]["2026-05-15"]["P1"]["retirement_termination"] == "6000.00"
    assert result["balances"]["2026-05-29"]["P1"]["retirement_termination"] == "0.00"
    residual = PaymentSchedule.objects.get(kind="residual")
    assert residual.trigger_date == dt.date(2026, 5, 15) and "paid in full" in residual.summary
    assert PaymentSchedule.objects.get(kind="benefit").settled_on == dt.date(2026, 5, 18)


def test_an_account_paid_out_to_the_cent_is_settled_and_a_rerun_pays_nothing_more():
    simulate(scenario(events=deferrals() + [sep("2026-04-10")], through="2026-05-29"))
    benefit = PaymentSchedule.objects.get(kind="benefit")
    assert benefit.settled_on == dt.date(2026, 5, 15)
    assert not PaymentSchedule.objects.filter(kind="residual").exists()
    assert payment_day_process(day=dt.date(2026, 5, 30)) is None  # nothing left for the job
    assert list(ScheduledPayment.objects.values_list("status", "amount")) == [("paid", Decimal("30000.00"))]


def test_a_residual_after_death_goes_to_the_death_benefits_payees_by_their_shares(edcp):
    from participants.services import beneficiaries_designate, employment_event_record

    simulate(scenario(events=deferrals(), through="2026-07-17"))
    p1 = Person.objects.get(employee_number="P1")
    beneficiaries_designate(
        person=p1,
        plan=edcp,
        actor="test",
        now=dt.datetime(2026, 2, 1, tzinfo=dt.UTC),
        beneficiaries=[
            {"tier": "primary", "name": "Ann Heir", "percent": 60},
            {"tier": "primary", "name": "Ben Heir", "percent": 40},
        ],
    )
    employment_event_record(person=p1, kind="death", effective_date=dt.date(2026, 7, 20), actor="test")
    advance(to="2026-07-31", price="10.00")
    advance(to="2026-08-19", price="12.00")  # 30,000.00 valued July 20 sells 2,500 units on August 17
    rows = [
        (p.trigger, p.payee_name, p.payment_date, p.paid_on, p.amount)
        for p in ScheduledPayment.objects.filter(status="paid").order_by("id")
    ]
    assert rows == [
        ("death", "Ann Heir", dt.date(2026, 8, 15), dt.date(2026, 8, 17), Decimal("18000.00")),
        ("death", "Ben Heir", dt.date(2026, 8, 15), dt.date(2026, 8, 17), Decimal("12000.00")),
        ("residual", "Ann Heir", dt.date(2026, 8, 18), dt.date(2026, 8, 18), Decimal("3600.00")),
        ("residual", "Ben Heir", dt.date(2026, 8, 18), dt.date(2026, 8, 18), Decimal("2400.00")),
    ]


def test_money_credited_to_a_settled_account_reopens_it_for_a_residual_paid_on_the_next_valuation_date():
    from books.models import Source
    from books.services.accounts import credit_create
    from participants.models import Participation

    simulate(scenario(events=deferrals() + [sep("2026-04-10")], through="2026-05-29"))
    credit_create(
        participation=Participation.objects.get(),
        account_name="retirement_termination",
        source=Source.DEFERRAL,
        amount=Decimal("250.00"),
        effective_date=dt.date(2026, 6, 3),
        idempotency_key="late-credit",
        actor="test",
    )
    advance(to="2026-06-05")
    residual = ScheduledPayment.objects.get(trigger="residual")
    assert (
        residual.payment_date,
        residual.release_date,
        residual.paid_on,
        residual.amount,
        residual.status,
    ) == (dt.date(2026, 6, 4), dt.date(2026, 6, 4), dt.date(2026, 6, 4), Decimal("250.00"), "paid")
    assert PaymentSchedule.objects.get(kind="benefit").settled_on == dt.date(2026, 6, 4)


# --- the unpriced-fund hold ------------------------------------------------------------------------------


def test_a_payment_whose_valuation_date_has_no_fund_price_is_held_with_the_reason_until_the_price_is_loaded():
    from books.services.crediting import credit_valuation_date
    from payments.selectors import payments_held
    from plans.models import Fund, FundPrice

    # The lump sum is valued as of April 30; the simulated prices stop at April 29.
    simulate(scenario(events=deferrals(gross="20000.00") + [sep("2026-04-10")], through="2026-04-29"))
    assert credit_valuation_date(valuation_date=dt.date(2026, 4, 30)).status != "done"  # no price: refused
    payment_day_process(day=dt.date(2026, 5, 1))
    held = list(payments_held())
    assert [(p.hold_code, p.status) for p in held] == [("unpriced_fund", "held")]
    assert "holds SV with no price on 2026-04-30" in held[0].hold_reason
    payment_day_process(day=dt.date(2026, 5, 2))
    assert list(payments_held()) == held  # still on the work queue, nothing paid
    FundPrice.objects.create(
        fund=Fund.objects.get(code="SV"),
        date=dt.date(2026, 4, 30),
        price=Decimal("10.00"),
        loaded_at=dt.datetime(2026, 5, 2, tzinfo=dt.UTC),
    )
    assert credit_valuation_date(valuation_date=dt.date(2026, 4, 30)).status == "done"
    payment_day_process(day=dt.date(2026, 5, 3))
    payment = ScheduledPayment.objects.get()
    assert (payment.status, payment.hold_code, payment.amount) == ("valued", "", Decimal("60000.00"))
