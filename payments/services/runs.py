"""Payment runs: one staff member prepares, a different one approves; approval releases the run.

Release queues one distribution per payment in the books (books.services.accounts.pending_create),
effective on the payment's release date, so the crediting of that Valuation Date sells the units.
The CSV for payroll and the register PDF are produced from the stored run and its payments only.
"""

from __future__ import annotations

import datetime as dt
import io
import logging
from collections import defaultdict
from decimal import Decimal
from typing import TYPE_CHECKING

from django.contrib.auth.models import User
from django.db import transaction
from django.db.models import Count, Sum
from django.utils import timezone

from books.models import EntryKind, Source
from books.services.accounts import pending_create
from core.audit import actor_label, audit_record
from core.csv_export import CsvWriter
from core.errors import ApplicationError
from core.money import ZERO
from core.pdf import document_store
from core.roles import Cap, has_cap
from payments.models import PaymentRun, ScheduledPayment
from payments.services.bulk import bulk_update_fast
from payments.services.withholding import withholding_apply

if TYPE_CHECKING:
    from collections.abc import Iterable

    from django.db.models import QuerySet

    from core.audit import Actor
    from core.models import Document

S = ScheduledPayment.Status
logger = logging.getLogger(__name__)


class PaymentRunError(ApplicationError):
    """A refused run action; the message says why."""


def runs_refresh_totals(*, run_ids: Iterable[int | None]) -> None:
    for run in PaymentRun.objects.filter(id__in=[r for r in run_ids if r]):
        _totals(run)
        run.save()


def _totals(run: PaymentRun) -> None:
    agg = run.payments.exclude(status=S.CANCELLED).aggregate(
        n=Count("id"),
        g=Sum("amount"),
        f=Sum("federal_withholding"),
        s=Sum("state_withholding"),
        net=Sum("net_amount"),
    )
    run.payments_count = agg["n"] or 0
    run.gross_total, run.federal_total = agg["g"] or ZERO, agg["f"] or ZERO
    run.state_total, run.net_total = agg["s"] or ZERO, agg["net"] or ZERO


def payments_ready(*, period_end: dt.date, period_start: dt.date | None = None) -> QuerySet[ScheduledPayment]:
    qs = ScheduledPayment.objects.filter(status=S.VALUED, run__isnull=True, release_date__lte=period_end)
    if period_start is not None:
        qs = qs.filter(release_date__gte=period_start)
    return qs


@transaction.atomic
def payment_run_prepare(
    *, period_end: dt.date, actor: User, now: dt.datetime | None = None, period_start: dt.date | None = None
) -> PaymentRun:
    """Group every valued payment released in the period into a run, with its withholding."""
    if not has_cap(actor, Cap.PREPARE_PAYMENTS):
        raise PaymentRunError(
            "Preparing a payment run needs the prepare-payments capability (administrators)."
        )
    now = now or timezone.now()
    payments = list(
        payments_ready(period_end=period_end, period_start=period_start)
        .select_for_update()
        .select_related("participation__person")
        .order_by("release_date", "id")
    )
    if not payments:
        raise PaymentRunError(
            f"No valued payment is due for release by {period_end:%B %d, %Y}: nothing to put in a run."
        )
    run = PaymentRun.objects.create(
        period_start=period_start, period_end=period_end, prepared_by=actor, prepared_at=now
    )
    withholding_apply(payments=payments)
    for p in payments:
        p.run, p.status = run, S.IN_RUN
    bulk_update_fast(
        objs=payments,
        model=ScheduledPayment,
        fields=[
            "run",
            "status",
            "federal_withholding",
            "state_withholding",
            "state",
            "net_amount",
            "withholding_basis",
        ],
    )
    _totals(run)
    run.save()
    audit_record(
        action="payment_run.prepare",
        actor=actor,
        at=now,
        obj=run,
        data={
            "payments": run.payments_count,
            "gross": str(run.gross_total),
            "through": period_end.isoformat(),
        },
    )
    return run


@transaction.atomic
def payment_run_approve(*, run: PaymentRun, actor: User, now: dt.datetime | None = None) -> PaymentRun:
    """The second pair of eyes: a committee member other than the preparer approves, which releases the run."""
    run = PaymentRun.objects.select_for_update().get(pk=run.pk)
    if not has_cap(actor, Cap.APPROVE_PAYMENTS):
        raise PaymentRunError(
            "Approving a payment run needs the approve-payments capability (committee members)."
        )
    if run.prepared_by_id == getattr(actor, "pk", None):
        raise PaymentRunError(
            f"You prepared payment run {run.pk}; a different person must approve it (maker-checker)."
        )
    if run.status != PaymentRun.Status.PREPARED:
        raise PaymentRunError(f"Payment run {run.pk} is already {run.get_status_display().lower()}.")
    now = now or timezone.now()
    run.approved_by, run.approved_at = actor, now
    _release(run, actor=actor, now=now)
    run.status = PaymentRun.Status.RELEASED
    _totals(run)
    run.save()
    audit_record(
        action="payment_run.approve",
        actor=actor,
        at=now,
        obj=run,
        data={"payments": run.payments_count, "gross": str(run.gross_total)},
    )
    _queue_advice(run)
    return run


def _queue_advice(run: PaymentRun) -> None:
    """Once the release commits, a worker sends each payee's payment advice (payments.services.advice). Should
    the broker be unreachable the run stands; the advice is sent by running the task again (idempotent)."""
    from payments.tasks import payment_advice_task  # noqa: PLC0415 - on use: the tasks module imports services

    run_id = run.pk

    def queue() -> None:
        try:
            payment_advice_task.delay(run_id)
        except Exception:  # noqa: BLE001 - the broker is down; logged, the task can be run again
            logger.warning("could not queue the payment advice of run %s", run_id, exc_info=True)

    transaction.on_commit(queue)


def _release(run: PaymentRun, *, actor: User, now: dt.datetime) -> None:
    payments = list(
        run.payments.filter(status=S.IN_RUN).select_related("account").order_by("release_date", "id")
    )
    who = f"payment run {run.pk} approved by {actor_label(actor)}"
    approved_on = timezone.localdate(now)
    for p in payments:
        if not p.moves_units:
            # A defined benefit payment (BRP) sells no notional units: nothing goes to the books; it is paid on its
            # release date (at once when approved on or after it).
            p.status = S.PAID if p.release_date <= approved_on else S.RELEASED
            p.paid_on = approved_on if p.status == S.PAID else None
    moving = [p for p in payments if p.moves_units]
    # The payees of one benefit valued on its release date share one liquidation; the crediting sells
    # everything and the payment job splits what it brought by their percentages.
    shared: dict[tuple, list[ScheduledPayment]] = defaultdict(list)
    for p in moving:
        if p.share == ScheduledPayment.Share.LIQUIDATE_PART:
            shared[(p.schedule_id, p.trigger, p.payment_date, p.release_date)].append(p)
    for p in moving:
        if p.pending_id:
            continue
        group = shared.get((p.schedule_id, p.trigger, p.payment_date, p.release_date), [p])
        liquidate = p.share in ScheduledPayment.LIQUIDATING
        memo = f"{p.benefit}: {p.label}, Payment Date {p.payment_date}"
        if len(group) > 1:
            memo += f", to {len(group)} payees"
        pending, _ = pending_create(
            account=p.account,
            kind=EntryKind.DISTRIBUTION,
            source=Source.DISTRIBUTION,
            amount=-sum((g.amount or ZERO for g in group), ZERO),
            effective_date=p.release_date,
            idempotency_key=f"payment:{p.pk}",
            actor=who,
            memo=memo,
            cite=p.cite,
            liquidate_all=liquidate,
        )
        for g in group:
            g.pending, g.status = pending, S.RELEASED
    bulk_update_fast(objs=payments, model=ScheduledPayment, fields=["pending", "status", "paid_on"])


CSV_COLUMNS = [
    "run",
    "payment",
    "employee_number",
    "name",
    "address",
    "state",
    "plan",
    "account",
    "benefit",
    "form",
    "payment_date",
    "release_date",
    "valued_as_of",
    "gross",
    "federal_withholding",
    "state_withholding",
    "net",
    "plan_section",
    "payee",
    "payee_percent",
]


def payment_run_csv(*, run: PaymentRun) -> str:
    """The payroll file of an approved run: one line per payment (NQDC benefits are paid as wages)."""
    if run.status != PaymentRun.Status.RELEASED:
        raise PaymentRunError(f"Payment run {run.pk} is not approved yet: payroll gets only approved runs.")
    out = io.StringIO()
    writer = CsvWriter(out)
    writer.writerow(CSV_COLUMNS)
    for p in (
        run.payments.exclude(status=S.CANCELLED)
        .select_related("participation__person", "participation__plan", "account")
        .order_by("id")
    ):
        person = p.participation.person
        writer.writerow(
            [
                run.pk,
                p.pk,
                person.employee_number,
                person.full_name,
                " / ".join(person.address_lines),
                p.state,
                p.participation.plan.code,
                p.account.name,
                p.benefit,
                p.label,
                p.payment_date.isoformat(),
                p.release_date.isoformat(),
                p.valued_as_of.isoformat() if p.valued_as_of else "",
                _fmt(p.amount),
                _fmt(p.federal_withholding),
                _fmt(p.state_withholding),
                _fmt(p.net_amount),
                p.cite,
                p.payee_name or person.full_name,
                f"{p.percent.normalize():f}"
                if p.share in ScheduledPayment.PARTS and p.percent is not None
                else "",
            ]
        )
    return out.getvalue()


def _fmt(value: Decimal | None) -> str:
    return "" if value is None else f"{value:.2f}"


def _person_name(user: User) -> str:
    return user.get_full_name() or "a staff member with no name on file"


def payment_run_register(*, run: PaymentRun, actor: Actor, now: dt.datetime | None = None) -> Document:
    """The register PDF of a run (stored by content hash; rendering again gives the same document)."""
    payments = list(
        run.payments.exclude(status=S.CANCELLED)
        .select_related("participation__person", "participation__plan", "account")
        .order_by("release_date", "id")
    )
    doc = document_store(
        kind="payment_register",
        title=f"Payment register, run {run.pk}",
        template="payments/pdf/register.html",
        context={
            "run": run,
            "payments": payments,
            "title": f"Payment register, run {run.pk}",
            "plan_name": "Nonqualified deferred compensation plans",
            "sponsor": payments[0].participation.plan.sponsor if payments else "",
            # names, never user names (issue 11): a payee or auditor reads this register
            "preparer": _person_name(run.prepared_by),
            "approver": _person_name(run.approved_by) if run.approved_by else "",
        },
        actor=actor_label(actor),
        obj=run,
        now=now,
    )
    if run.register_id != doc.pk:
        run.register = doc
        run.save(update_fields=["register"])
    return doc
