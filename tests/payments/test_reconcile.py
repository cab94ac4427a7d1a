"""One reconciliation of planned against stored payments (payments/services/reconcile.py), the rules the account
schedules and the BRP annuities share. In memory: `reconcile` decides, it does not write."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

from payments.models import ScheduledPayment
from payments.services.annuities import HOLD_CODES, Due
from payments.services.annuities import _signature as annuity_signature
from payments.services.reconcile import COMPUTED_HOLDS, reconcile

S, K = ScheduledPayment.Status, ScheduledPayment.Kind
JAN, FEB = dt.date(2027, 1, 1), dt.date(2027, 2, 1)


def month(day: dt.date, amount: str, *, number: int, hold: str = "") -> Due:
    return Due(
        "separation",
        "Supplemental Benefit",
        K.ANNUITY,
        number,
        0,
        day,
        Decimal(amount),
        "Ann Lee",
        "",
        "",
        hold,
    )


def stored(
    pk: int, day: dt.date, amount: str, *, number: int, status=S.SCHEDULED, run_id=None, hold=""
) -> ScheduledPayment:
    return ScheduledPayment(
        id=pk,
        trigger="separation",
        benefit="Supplemental Benefit",  # the benefit's name is part of what matches (Post-2004 / Pre-2005 parts)
        kind=K.ANNUITY,
        number=number,
        payment_date=day,
        amount=Decimal(amount),
        payee_name="Ann Lee",
        status=status,
        run_id=run_id,
        hold_code=hold,
    )


def merge(have, planned, holds=COMPUTED_HOLDS):
    return reconcile(
        have=have,
        planned=planned,
        stored_signature=annuity_signature,
        because="recomputed",
        computed_holds=holds,
    )


def test_a_month_already_paid_is_never_paid_a_second_time_when_the_amount_is_recomputed():
    paid = stored(1, JAN, "1000.00", number=1, status=S.PAID)
    result = merge([paid], [month(JAN, "1100.00", number=1), month(FEB, "1100.00", number=2)])
    assert [(d.payment_date, d.amount) for d in result.new] == [(FEB, Decimal("1100.00"))]
    assert paid.status == S.PAID and not result.cancelled


def test_an_unpaid_payment_no_longer_planned_is_cancelled_with_the_reason_and_leaves_its_run():
    in_run = stored(2, JAN, "1000.00", number=1, status=S.IN_RUN, run_id=7)
    result = merge([in_run], [])
    assert result.cancelled == [in_run] and in_run.status == S.CANCELLED and in_run.run_id is None
    assert in_run.cancelled_reason == "No longer due after: recomputed"
    assert result.runs == {7}  # its run's totals are refreshed when the change is written


def test_a_matching_payment_stays_and_nothing_changes():
    same = stored(3, JAN, "1000.00", number=1)
    result = merge([same], [month(JAN, "1000.00", number=1)])
    assert not result.changed and same.status == S.SCHEDULED


def test_a_hold_the_computation_set_follows_the_answer_and_a_hold_staff_set_stays():
    figures = HOLD_CODES["no_figures"]
    computed = stored(4, JAN, "1000.00", number=1, status=S.HELD, hold=figures)
    by_staff = stored(5, FEB, "1000.00", number=2, status=S.HELD, hold="staff_review")
    result = merge(
        [computed, by_staff],
        [month(JAN, "1000.00", number=1), month(FEB, "1000.00", number=2)],
        holds=COMPUTED_HOLDS | set(HOLD_CODES.values()),
    )
    assert computed.status == S.SCHEDULED and computed.hold_code == ""
    assert by_staff.status == S.HELD and by_staff.hold_code == "staff_review"
    assert result.updated == [computed]
