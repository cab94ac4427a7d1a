"""Money in an account after its benefit was paid in full: paid out as a residual, never stranded.

Two ways money outlives a benefit "paid in full":
  - earnings after a final payment fixed at its valuation date (an EDCP lump sum valued at the end
    of the month of separation, 5.1(a), is paid on the 15th; the account stays invested between);
  - money credited after the final payment (an RRP retirement restoration contribution declared
    after the lump sum, RRP 3.02; an EDCP company contribution credited after separation, 4.1), also
    into an account first opened after its Payment Date had passed.
The plans pay the whole (vested) account (EDCP 5.1-5.4: "the value of the Account"; RRP 4.01(a):
"the total vested value of the Participant's Account"; RRP 4.04: that payment discharges the
obligation), so what is left belongs to the same benefit. Reading: it is paid as soon as
practicable as one lump sum of everything the account holds (the plans' "as soon as practicable"
and EDCP 1.22: the Payment Date of a payment without a date of its own is the date of its trigger):
  - its trigger is the date the residual is credited: the day the final payment was posted (earnings
    left by it) or, for money credited later, the Valuation Date that credited it;
  - Payment Date: the next Valuation Date after that one, the first day on which it is known (a
    residual appears only when that day's crediting is done) and so the soonest practicable; it is
    released on that day, valued on that day (everything is sold): FORMAT.md's `paid_on`, the first
    Valuation Date on or after the Payment Date, is the Payment Date itself;
  - to the same payee: the participant, or after death the death benefit's payees by their shares;
  - cited to the section of the benefit it completes.
An account is "settled" (PaymentSchedule.settled_on) once its benefit's final payment is paid (or
found nothing to pay) and nothing is left; a credit posted after that date reopens it.
"""

from __future__ import annotations

import datetime as dt

from django.db import connection, transaction
from simple_history.utils import bulk_create_with_history

from books.models import EntryKind, PendingTransaction
from core import valuation_calendar as cal
from participants.models import EmploymentEvent
from payments.models import PaymentSchedule, ScheduledPayment
from payments.services.beneficiaries import death_payees
from payments.services.bulk import bulk_update_fast
from payments.services.engine import FINAL_SHARES, death_lump_sums
from payments.services.schedules import planned_to_row
from payments.services.values import available_values

S = ScheduledPayment.Status
BENEFIT_NAME = "Residual balance"

_FINAL = (
    "(p.share IN (" + ", ".join(f"'{s}'" for s in FINAL_SHARES) + ") "
    "OR (p.kind = 'installment' AND p.number = p.of))"
)
_FINISHED = "(p.status = 'paid' OR (p.status = 'cancelled' AND p.amount = 0))"

# Benefit schedules whose final payment is done, with nothing of the account outstanding, not yet settled.
UNSETTLED_SQL = f"""
SELECT s.id FROM payments_paymentschedule s
WHERE s.kind = 'benefit' AND s.settled_on IS NULL AND s.trigger <> ''
  AND EXISTS (SELECT 1 FROM payments_scheduledpayment p WHERE p.schedule_id = s.id AND {_FINAL} AND {_FINISHED})
  AND NOT EXISTS (SELECT 1 FROM payments_scheduledpayment p WHERE p.account_id = s.account_id
                  AND p.status NOT IN ('paid', 'cancelled'))
"""
# Settled accounts that hold units again on the last credited Valuation Date (money credited after),
# with nothing of the account outstanding (a residual sells everything: it waits for any other payment).
REOPENED_SQL = """
SELECT s.id FROM payments_paymentschedule s
WHERE s.kind = 'benefit' AND s.settled_on IS NOT NULL AND s.settled_on < %(credited)s
  AND EXISTS (SELECT 1 FROM books_dailyvaluation v WHERE v.valuation_date = %(credited)s
              AND v.account_id = s.account_id AND v.units <> 0)
  AND NOT EXISTS (SELECT 1 FROM payments_scheduledpayment p WHERE p.account_id = s.account_id
                  AND p.status NOT IN ('paid', 'cancelled'))
"""


def _ids(sql: str, params: dict | None = None) -> list[int]:
    with connection.cursor() as cursor:
        cursor.execute(sql, params or {})
        return [r[0] for r in cursor.fetchall()]


def _finished_on(account_ids: list[int]) -> dict[int, dt.date]:
    """The day the account's last final payment (benefit or residual) was done with."""
    out: dict[int, dt.date] = {}
    finals = ScheduledPayment.objects.filter(
        account_id__in=account_ids,
        schedule__kind__in=[PaymentSchedule.Kind.BENEFIT, PaymentSchedule.Kind.RESIDUAL],
    ).filter(status__in=[S.PAID, S.CANCELLED])
    for p in finals.only(
        "account_id",
        "status",
        "share",
        "kind",
        "number",
        "of",
        "amount",
        "paid_on",
        "valued_as_of",
        "valuable_on",
    ):
        final = p.share in FINAL_SHARES or (p.kind == ScheduledPayment.Kind.INSTALLMENT and p.number == p.of)
        if not final or (p.status == S.CANCELLED and p.amount != 0):
            continue
        day = p.paid_on if p.status == S.PAID else (p.valued_as_of or p.valuable_on)
        if day is not None and day > out.get(p.account_id, dt.date.min):
            out[p.account_id] = day
    return out


def _credited_after(
    account_ids: list[int], since: dict[int, dt.date], credited: dt.date
) -> dict[int, dt.date]:
    """The last Valuation Date that credited money to each account after its `since` date."""
    out: dict[int, dt.date] = {}
    if not since:
        return out
    rows = PendingTransaction.objects.filter(
        account_id__in=account_ids,
        kind=EntryKind.CREDIT,
        status=PendingTransaction.Status.APPLIED,
        applied_on__gt=min(since.values()),
        applied_on__lte=credited,
    ).values_list("account_id", "applied_on")
    for account_id, day in rows:
        if day is not None and day > since[account_id] and day > out.get(account_id, dt.date.min):
            out[account_id] = day
    return out


def accounts_settle(*, credited: dt.date | None, now: dt.datetime) -> dict[str, int]:
    """Settle the accounts whose benefit is done; pay what is left (or credited since) as a residual."""
    if credited is None:
        return {}
    ids = _ids(UNSETTLED_SQL) + _ids(REOPENED_SQL, {"credited": credited})
    if not ids:
        return {}
    stats = {"settled": 0, "residuals": 0}
    with transaction.atomic():
        schedules = list(
            PaymentSchedule.objects.select_for_update(of=("self",))
            .filter(id__in=ids)
            .select_related("participation__person", "participation__plan", "account")
            .order_by("id")
        )
        account_ids = [s.account_id for s in schedules]
        values = available_values(account_ids=account_ids, on=credited, credited=credited)
        finished = _finished_on(account_ids)
        since = {s.account_id: s.settled_on or finished.get(s.account_id) or credited for s in schedules}
        later = _credited_after(account_ids, since, credited)
        rows: list[ScheduledPayment] = []
        for s in schedules:
            if values[s.account_id] <= 0:
                s.settled_on = credited
                stats["settled"] += 1
                continue
            rows += _residual(
                s, payment_date=later.get(s.account_id, since[s.account_id]), credited=credited, now=now
            )
            s.settled_on = None
            stats["residuals"] += 1
        bulk_update_fast(objs=schedules, model=PaymentSchedule, fields=["settled_on"])
        if rows:
            bulk_create_with_history(rows, ScheduledPayment, batch_size=2000)
    return stats


def _residual(
    benefit: PaymentSchedule, *, payment_date: dt.date, credited: dt.date, now: dt.datetime
) -> list[ScheduledPayment]:
    participation = benefit.participation
    person = participation.person
    cite = benefit.cite or participation.plan.code
    death = (
        EmploymentEvent.objects.filter(person=person, kind=EmploymentEvent.Kind.DEATH)
        .values_list("effective_date", flat=True)
        .first()
    )
    payees = None
    if death is not None and death <= payment_date:
        version = participation.plan.version_on(death)
        payees = death_payees(person=person, plan=participation.plan, version=version, death=death)
    release = cal.next_valuation_date_after(credited)
    reason = (
        f"money left in or credited to the account on {payment_date:%B %d, %Y}, after its "
        f"{benefit.benefit or 'benefit'} was paid in full: paid as soon as practicable, all of it, "
        f"on the next Valuation Date, {release:%B %d, %Y}"
    )
    schedule = PaymentSchedule.objects.create(
        participation=participation,
        account=benefit.account,
        kind=PaymentSchedule.Kind.RESIDUAL,
        trigger="residual",
        trigger_date=payment_date,
        benefit=BENEFIT_NAME,
        form="lump_sum",
        cite=cite[:60],
        summary=(
            f"{BENEFIT_NAME} ({cite}): {reason}"
            + (f"; to {', '.join(p.name for p in payees.payees)} ({payees.explanation})" if payees else "")
            + "."
        ),
        revision=1,
        computed_at=now,
        computed_because=f"{benefit.account.name} holds money after its benefit was paid",
    )
    out = []
    for planned in death_lump_sums(
        trigger="residual",
        benefit=BENEFIT_NAME,
        date=release,  # the Payment Date: the soonest practicable day, once the residual is known
        valuation="release_date",
        event=payment_date,
        cite=cite,
        reason=reason,
        payees=payees,
    ):
        row = planned_to_row(p=planned, schedule=schedule, revision=1, now=now)
        row.release_date = release
        row.valuable_on = cal.previous_valuation_date(release)
        out.append(row)
    return out
