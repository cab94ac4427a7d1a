"""The daily payment job: keep schedules current, value what is due, hold what cannot be paid, close what was paid.

For a day D, in order, each step set-based, committed in batches and safe to repeat:
  1. schedules: accounts without one get theirs; schedules waiting for a credited value recompute
  2. holds: held payments are checked again; a resolved hold goes back to the queue
  3. valuation: payments whose valuation date is credited get their gross amount (or are held)
  4. paid: released payments whose distribution the crediting has posted are marked paid
  5. settled: an account whose benefit is paid in full is settled, or what it still holds (earnings
     after a fixed final payment, money credited later) is paid as a residual (payments.services.residuals)
The job claims (payments, D) in core_jobrun, under an advisory lock, so two workers never overlap
and a rerun after a crash continues where the statuses say it stopped. The release itself happens
when a second staff member approves the run (payments.services.runs).
"""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from dataclasses import dataclass
from decimal import Decimal

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Count, Min, Q
from django.utils import timezone

from books.models import DailyValuation, EntryKind, PendingTransaction, Position
from books.selectors import last_credited_date
from core import valuation_calendar as cal
from core.dates import add_months, first_of_month
from core.jobs import job_claim, job_finish, job_item, job_lock, job_progress
from core.models import JobRun
from core.money import ZERO, installment, money, percent_of
from payments.models import Annuity, PaymentSchedule, ScheduledPayment
from payments.services.annuities import HOLD_CODES as ANNUITY_HOLDS
from payments.services.annuities import HORIZON_MONTHS, annuities_extend
from payments.services.annuities import horizon as annuity_horizon
from payments.services.beneficiaries import split_among
from payments.services.bulk import bulk_update_fast
from payments.services.residuals import REOPENED_SQL, UNSETTLED_SQL, accounts_settle
from payments.services.runs import runs_refresh_totals
from payments.services.schedules import schedules_ensure, schedules_recompute
from payments.services.values import available_values
from payments.services.withholding import withholding_apply
from plans.models import FundPrice

JOB_KIND = "payments"
S = ScheduledPayment.Status
SH = ScheduledPayment.Share

# The same statement on PostgreSQL and SQLite: the last credited date comes in as a parameter (a date), so
# no date is computed or cast in SQL (SQLite keeps dates as ISO text, where a cast would give a number).
_WORK_SQL = (
    """
SELECT
  EXISTS (SELECT 1 FROM books_account a WHERE NOT EXISTS
          (SELECT 1 FROM payments_paymentschedule s WHERE s.account_id = a.id AND s.kind = 'benefit')),
  EXISTS (SELECT 1 FROM payments_paymentschedule s WHERE s.provisional_until <= %(credited)s),
  EXISTS (SELECT 1 FROM payments_scheduledpayment p WHERE p.status = 'held'),
  EXISTS (SELECT 1 FROM payments_scheduledpayment p WHERE p.status = 'scheduled'
          AND p.valuable_on <= %(credited)s),
  EXISTS (SELECT 1 FROM payments_scheduledpayment p JOIN books_pendingtransaction t ON t.id = p.pending_id
          WHERE p.status = 'released' AND t.status <> 'pending')
  OR EXISTS (SELECT 1 FROM payments_scheduledpayment p WHERE p.status = 'released' AND p.pending_id IS NULL
             AND p.release_date <= %(day)s),
  EXISTS (SELECT 1 FROM payments_scheduledpayment p WHERE p.status = 'valued' AND p.run_id IS NULL
          AND p.release_date <= %(day)s),
  EXISTS ("""
    + UNSETTLED_SQL
    + """),
  EXISTS (SELECT 1 FROM payments_scheduledpayment p WHERE p.status = 'scheduled'
          AND p.valuable_on > %(credited)s AND p.valuable_on < %(day)s),
  EXISTS ("""
    + REOPENED_SQL
    + """),
  EXISTS (SELECT 1 FROM payments_annuity a WHERE a.status = 'in_pay' AND a.scheduled_through < %(horizon)s)
"""
)


@dataclass(frozen=True)
class Work:
    credited: dt.date | None
    unscheduled: bool
    provisional: bool
    held: bool
    to_value: bool
    to_close: bool
    ready: bool
    to_settle: bool
    uncredited: bool
    reopened: bool
    annuities: bool = False  # monthly annuity payments to plan further ahead

    @property
    def for_job(self) -> bool:
        return (
            self.unscheduled
            or self.provisional
            or self.held
            or self.to_value
            or self.to_close
            or self.to_settle
            or self.uncredited
            or self.reopened
            or self.annuities
        )


def payment_work(*, day: dt.date) -> Work:
    """Two queries: the last credited Valuation Date, then is there anything for the payment job (or a run)?"""
    credited = last_credited_date()
    with connection.cursor() as cursor:
        cursor.execute(_WORK_SQL, {"day": day, "credited": credited, "horizon": annuity_horizon(day=day)})
        flags = cursor.fetchone()
    return Work(credited, *(bool(f) for f in flags))


# --- steps ----------------------------------------------------------------------------------------


def _recompute_provisional(credited: dt.date | None, now: dt.datetime) -> int:
    if credited is None:
        return 0
    ids = list(
        PaymentSchedule.objects.filter(provisional_until__lte=credited).values_list("account_id", flat=True)
    )
    schedules_recompute(
        account_ids=ids,
        now=now,
        because="the value on the day of the event is now credited",
    )
    return len(ids)


def _recheck_holds(now: dt.datetime, credited: dt.date | None = None) -> int:
    """Held payments stay on the work queue until their reason is gone; then they go back to the queue."""
    held = list(ScheduledPayment.objects.filter(status=S.HELD).select_related("participation__person"))
    key_accounts = {p.account_id for p in held if p.hold_code == "key_employee_unknown"}
    if key_accounts:
        schedules_recompute(
            account_ids=key_accounts,
            now=now,
            because="Key Employee list check",
        )
    waiting = {p.account_id for p in held if p.hold_code in ANNUITY_HOLDS.values()} - key_accounts
    if waiting:
        schedules_recompute(
            account_ids=waiting,
            now=now,
            because="check for the inputs a defined benefit waits for",
        )
    released = []
    for p in held:
        if p.hold_code == "no_address" and p.participation.person.has_address:
            released.append(p)
        elif p.hold_code == "unpriced_fund" and not _still_unpriced(p, credited):
            released.append(p)
    for p in released:
        p.status, p.hold_code, p.hold_reason = S.SCHEDULED, "", ""
    if released:
        bulk_update_fast(objs=released, model=ScheduledPayment, fields=["status", "hold_code", "hold_reason"])
    return len(released)


def _still_unpriced(p: ScheduledPayment, credited: dt.date | None) -> bool:
    if credited is None:
        return True
    if credited < p.valuable_on and _unpriced({p.account_id}, cal.next_valuation_date_after(credited)):
        return True  # its Valuation Date still cannot be credited
    return bool(_unpriced({p.account_id}, credited))


def _hold_uncreditable(day: dt.date, credited: dt.date | None) -> int:
    """A payment whose valuation date has passed but cannot be credited, because a fund the account holds has no
    price that day, is held with the reason on the work queue instead of waiting unseen."""
    if credited is None:
        return 0
    stuck = cal.next_valuation_date_after(credited)
    if stuck >= day:
        return 0  # that Valuation Date is not due to be credited yet
    waiting = list(
        ScheduledPayment.objects.filter(status=S.SCHEDULED, valuable_on__gte=stuck, valuable_on__lt=day)
    )
    unpriced = _unpriced({p.account_id for p in waiting}, stuck) if waiting else {}
    held = [p for p in waiting if p.account_id in unpriced]
    for p in held:
        p.status, p.hold_code = S.HELD, "unpriced_fund"
        p.hold_reason = (
            f"The account holds {', '.join(unpriced[p.account_id])} with no price on {stuck}: that "
            f"Valuation Date cannot be credited, so the payment cannot be valued. Load the price."
        )
    if held:
        bulk_update_fast(objs=held, model=ScheduledPayment, fields=["status", "hold_code", "hold_reason"])
    return len(held)


def _unpriced(account_ids: set[int], day: dt.date) -> dict[int, list[str]]:
    """Accounts holding units of a fund with no price on `day` (their value cannot be known)."""
    positions = list(Position.objects.filter(account_id__in=account_ids).select_related("fund"))
    if not positions:
        return {}
    priced = set(
        FundPrice.objects.filter(date=day, fund_id__in={p.fund_id for p in positions}).values_list(
            "fund_id", flat=True
        )
    )
    suspects = [p for p in positions if p.fund_id not in priced]
    out: dict[int, list[str]] = defaultdict(list)
    for pos in suspects:
        last = (
            DailyValuation.objects.filter(position_id=pos.id, valuation_date__lte=day)
            .order_by("-valuation_date")
            .values_list("units", flat=True)
            .first()
        )
        if last:
            out[pos.account_id].append(pos.fund.code)
    return out


def _value_due(credited: dt.date, run: JobRun) -> dict[str, int]:
    """Give each payment whose valuation date is credited its gross amount (EDCP 5.1(a), 5.8)."""
    stats = {"valued": 0, "held": 0, "nothing_to_pay": 0}
    total = ScheduledPayment.objects.filter(status=S.SCHEDULED, valuable_on__lte=credited).count()
    done = 0
    while True:
        batch = list(
            ScheduledPayment.objects.filter(status=S.SCHEDULED, valuable_on__lte=credited)
            .select_related("participation__person")
            .order_by("account_id", "payment_date", "number", "id")[: settings.PAYMENT_JOB_BATCH]
        )
        if not batch:
            return stats
        with transaction.atomic():
            _value_batch(batch, credited, stats)
        done += len(batch)
        job_progress(run, done=done, total=max(total, done), message="valuation")


def _groups(batch: list[ScheduledPayment]) -> dict[tuple, list[tuple[int, Decimal]]]:
    """The payees' parts of each shared benefit in the batch (all of them, even outside it): (id, percent) by id."""
    keys = {(p.schedule_id, p.trigger, p.payment_date) for p in batch if p.share in ScheduledPayment.PARTS}
    if not keys:
        return {}
    out: dict[tuple, list[tuple[int, Decimal]]] = defaultdict(list)
    for pid, schedule_id, trigger, day, percent in (
        ScheduledPayment.objects.filter(
            schedule_id__in={k[0] for k in keys}, share__in=ScheduledPayment.PARTS
        )
        .exclude(status=S.CANCELLED)
        .order_by("id")
        .values_list("id", "schedule_id", "trigger", "payment_date", "percent")
    ):
        if (schedule_id, trigger, day) in keys:
            out[(schedule_id, trigger, day)].append((pid, percent or ZERO))
    return out


def _value_batch(batch: list[ScheduledPayment], credited: dt.date, stats: dict[str, int]) -> None:
    by_day: dict[dt.date, list[ScheduledPayment]] = defaultdict(list)
    for p in batch:
        by_day[p.valued_as_of or credited].append(p)
    unpriced = _unpriced({p.account_id for p in batch}, credited) if batch else {}
    changed: list[ScheduledPayment] = []
    groups = _groups(batch)
    ids = [p.id for p in batch] + [pid for members in groups.values() for pid, _ in members]
    for day, payments in sorted(by_day.items()):
        values = available_values(
            account_ids={p.account_id for p in payments}, on=day, credited=credited, exclude_payments=ids
        )
        shares: dict[int, Decimal] = {}
        for p in payments:
            changed.append(p)
            if not p.participation.person.has_address:
                p.status, p.hold_code = S.HELD, "no_address"
                p.hold_reason = (
                    "The payee's mailing address is unknown: record it before the payment can be made."
                )
                stats["held"] += 1
                continue
            if not p.moves_units:  # a defined benefit: the amount was fixed at commencement (BRP 3.4(c))
                p.status = S.VALUED
                stats["valued"] += 1
                continue
            if p.account_id in unpriced:
                p.status, p.hold_code = S.HELD, "unpriced_fund"
                p.hold_reason = (
                    f"The account holds {', '.join(unpriced[p.account_id])} with no price on {credited}: "
                    "load the price before the payment is valued."
                )
                stats["held"] += 1
                continue
            available = values[p.account_id]
            if p.share in ScheduledPayment.PARTS:
                # EDCP 5.4: the whole value, each payee its percentage (the last what rounding leaves).
                if p.id not in shares:
                    shares.update(
                        split_among(
                            amount=available, parts=groups[(p.schedule_id, p.trigger, p.payment_date)]
                        )
                    )
                    values[p.account_id] = ZERO
                _set_amount(p, shares[p.id], stats)
                continue
            if p.share == SH.ALL or p.share == SH.LIQUIDATE:
                amount = available
            elif p.share == SH.PERCENT:
                amount = percent_of(available, p.percent or 0)
            elif p.share == SH.INSTALLMENT:
                amount = installment(available, p.of - p.number + 1)
            else:
                amount = p.amount or ZERO
            amount = min(money(amount), available)
            values[p.account_id] = available - amount
            _set_amount(p, amount, stats)
    bulk_update_fast(
        objs=changed,
        model=ScheduledPayment,
        fields=["status", "hold_code", "hold_reason", "amount", "amount_is_estimate", "cancelled_reason"],
    )


def _set_amount(p: ScheduledPayment, amount: Decimal, stats: dict[str, int]) -> None:
    if amount <= 0:
        p.status, p.amount = S.CANCELLED, ZERO
        p.cancelled_reason = "Nothing to pay: the account holds nothing on its valuation date."
        stats["nothing_to_pay"] += 1
        return
    p.amount, p.amount_is_estimate = amount, p.share in ScheduledPayment.LIQUIDATING
    p.status = S.VALUED
    stats["valued"] += 1


def _close_paid() -> int:
    """Released payments whose distribution the crediting posted: paid on that Valuation Date."""
    done = 0
    while True:
        # Released payments that moved units (a defined-benefit payment has no distribution to wait for).
        released = ScheduledPayment.objects.filter(status=S.RELEASED, pending__isnull=False).select_related(
            "pending", "participation__person"
        )
        batch = list(
            released.exclude(pending__status=PendingTransaction.Status.PENDING).order_by("id")[
                : settings.PAYMENT_JOB_BATCH
            ]
        )
        if not batch:
            return done
        shared = {p.pending_id for p in batch if p.share == SH.LIQUIDATE_PART} - {None}
        if shared:  # the payees of one liquidation are closed together
            seen = {p.id for p in batch}
            batch += [p for p in released.filter(pending_id__in=shared).order_by("id") if p.id not in seen]
        by_pending: dict[PendingTransaction, list[ScheduledPayment]] = defaultdict(list)
        for p in batch:
            if p.pending is not None:  # always: `released` has a pending transaction
                by_pending[p.pending].append(p)
        relooked = []
        with transaction.atomic():
            for t, rows in by_pending.items():
                applied = -(t.applied_amount or ZERO)
                parts = (
                    split_among(
                        amount=applied,
                        parts=[(p.id, p.percent or ZERO) for p in sorted(rows, key=lambda r: r.id)],
                    )
                    if rows[0].share == SH.LIQUIDATE_PART
                    else {rows[0].id: applied}
                )
                for p in rows:
                    paid = parts.get(p.id, ZERO)
                    if t.status != PendingTransaction.Status.APPLIED or paid <= 0:
                        p.status, p.amount = S.CANCELLED, ZERO
                        p.cancelled_reason = "Nothing was paid: the account held nothing on the release date."
                        continue
                    p.status, p.paid_on = S.PAID, t.applied_on
                    if p.share in ScheduledPayment.LIQUIDATING or paid < (p.amount or ZERO):
                        p.amount, p.amount_is_estimate = paid, False
                        p.valued_as_of = p.valued_as_of or t.applied_on
                        relooked.append(p)
            if relooked:
                withholding_apply(payments=relooked)
            bulk_update_fast(
                objs=batch,
                model=ScheduledPayment,
                fields=[
                    "status",
                    "paid_on",
                    "amount",
                    "amount_is_estimate",
                    "valued_as_of",
                    "cancelled_reason",
                    "federal_withholding",
                    "state_withholding",
                    "net_amount",
                    "withholding_basis",
                ],
            )
        runs_refresh_totals(run_ids={p.run_id for p in relooked})
        done += len(batch)


def _close_defined(day: dt.date) -> int:
    """Released defined benefit payments (nothing to sell in the books) are paid on their release date."""
    batch = list(
        ScheduledPayment.objects.filter(
            status=S.RELEASED, pending__isnull=True, share=SH.DEFINED, release_date__lte=day
        )
    )
    for p in batch:
        p.status, p.paid_on = S.PAID, p.release_date
    if batch:
        bulk_update_fast(objs=batch, model=ScheduledPayment, fields=["status", "paid_on"])
    return len(batch)


# --- the job --------------------------------------------------------------------------------------


def payment_day_process(
    *, day: dt.date, now: dt.datetime | None = None, work: Work | None = None
) -> JobRun | None:
    """Process the payments of `day`. Nothing to do: None (no run recorded). Done already: the run as it is."""
    now = now or timezone.now()
    work = work or payment_work(day=day)
    if not work.for_job:
        return None
    with job_lock(JOB_KIND):
        run = job_claim(kind=JOB_KIND, key=day.isoformat(), now=now)
        if run.status == JobRun.Status.DONE:
            return run
        stats: dict[str, int] = {}
        job_progress(run, done=0, total=4, message="schedules")
        if work.unscheduled:
            job_item(run, "creating payment schedules")
            stats["schedules_created"] = schedules_ensure(now=now)
        if work.provisional:
            job_item(run, "recomputing provisional schedules")
            stats["schedules_recomputed"] = _recompute_provisional(work.credited, now)
        if work.annuities:
            job_item(run, "extending annuities")
            stats["annuities_extended"] = annuities_extend(day=day, now=now)
        if work.held:
            job_item(run, "rechecking holds")
            stats["holds_resolved"] = _recheck_holds(now, work.credited)
        if work.credited is not None:
            job_item(run, "valuing due payments")
            stats.update(_value_due(work.credited, run))
        if work.uncredited:
            job_item(run, "holding unpriced payments")
            stats["held_unpriced"] = _hold_uncreditable(day, work.credited)
        job_progress(run, done=3, total=4, message="closing paid payments")
        stats["paid"] = _close_paid() + _close_defined(day)
        job_item(run, "settling accounts")
        settled = accounts_settle(credited=work.credited, now=now)
        stats.update(settled)
        if settled.get("residuals") and work.credited is not None:
            stats["residuals_valued"] = _value_due(work.credited, run)["valued"]
        return job_finish(run, status=JobRun.Status.DONE, message="processed", stats=stats)


def payments_close_paid() -> int:
    """Mark paid what the crediting has posted (the simulator's end of run; the job does it every day)."""
    return _close_paid()


def release_date_for(*, day: dt.date) -> dt.date:
    return cal.next_valuation_date(day)


def payment_next_work_day(*, day: dt.date) -> dt.date | None:
    """Without new events, the first day after `day` on which the job could find work (None: never).

    One implementation for PostgreSQL and SQLite, through the ORM, so both databases skip the same days;
    date arithmetic is done here in Python, never in SQL (SQLite keeps dates as text). Each candidate
    is the earliest day its step of `payment_work` can find something:
      - a scheduled payment is valued the day after the crediting of its valuation date;
      - a valued payment goes into a run on its release date; a released one is closed the day after;
      - a provisional schedule is recomputed the day after its value is credited;
      - an annuity in pay is extended in the month its planned payments come within the horizon;
      - a credit pending for a settled account reopens it the day after it is credited;
      - a held payment, a benefit to settle, a settled account that money reopened (credited today, after
        the pending credit was seen) or an account without a schedule: every day (tomorrow).
    """
    tomorrow = day + dt.timedelta(days=1)
    payments = ScheduledPayment.objects.aggregate(
        held=Count("id", filter=Q(status=S.HELD)),
        scheduled=Min("valuable_on", filter=Q(status=S.SCHEDULED)),
        valued=Min("release_date", filter=Q(status=S.VALUED, run__isnull=True)),
        released=Min("release_date", filter=Q(status=S.RELEASED)),
    )
    credited = last_credited_date()
    if (
        payments["held"]
        or _exists(UNSETTLED_SQL)
        or _exists(_UNSCHEDULED_SQL)
        or (credited is not None and _exists(REOPENED_SQL, {"credited": credited}))
    ):
        return tomorrow
    after = dt.timedelta(days=1)
    candidates = [
        payments["scheduled"] and payments["scheduled"] + after,
        payments["valued"],
        payments["released"] and payments["released"] + after,
    ]
    provisional = PaymentSchedule.objects.aggregate(first=Min("provisional_until"))["first"]
    candidates.append(provisional and provisional + after)
    annuity = Annuity.objects.filter(status=Annuity.Status.IN_PAY).aggregate(first=Min("scheduled_through"))
    if annuity["first"] is not None:
        candidates.append(annuity_due_from(scheduled_through=annuity["first"]))
    reopening = PendingTransaction.objects.filter(
        status=PendingTransaction.Status.PENDING,
        kind=EntryKind.CREDIT,
        account__payment_schedules__kind=PaymentSchedule.Kind.BENEFIT,
        account__payment_schedules__settled_on__isnull=False,
    ).aggregate(first=Min("effective_date"))["first"]
    candidates.append(reopening and reopening + after)
    found = [c for c in candidates if c is not None]
    return max(min(found), tomorrow) if found else None


def annuity_due_from(*, scheduled_through: dt.date) -> dt.date:
    """The first day whose horizon (the 1st of the month twelve months ahead) passes `scheduled_through`."""
    return add_months(first_of_month(add_months(scheduled_through, -HORIZON_MONTHS)), 1)


_UNSCHEDULED_SQL = """
SELECT 1 FROM books_account a WHERE NOT EXISTS
  (SELECT 1 FROM payments_paymentschedule s WHERE s.account_id = a.id AND s.kind = 'benefit')
"""


def _exists(sql: str, params: dict | None = None) -> bool:
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT EXISTS ({sql})", params or {})
        return bool(cursor.fetchone()[0])
