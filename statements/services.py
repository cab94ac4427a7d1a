"""Making statements: one batch of participations at a time, each statement tied before it is stored.

`statements_issue_batch` is what a worker runs for one bounded batch: the figures of the whole batch
are read set-based (statements.figures), then each statement is tied, drawn, stored by its SHA-256
(core Document) and recorded (Statement) in its own transaction. A statement that does not tie is
not issued: the batch names the account. A statement already made for the period is skipped, so a
rerun makes no duplicate. `statement_issued` (statements.hooks) is sent for each new statement.

`statements_period_start` claims the period's JobRun and splits the work into batches;
`statements_batch_run` claims one batch's JobRun and, when the last batch ends, ends the period's run.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass, field
from decimal import Decimal

from django.db import IntegrityError, connection, transaction
from django.db.models import Q

from core.jobs import job_claim, job_finish, job_item, job_lock
from core.models import JobRun
from core.money import ZERO, money
from core.pdf import document_store_bytes, documents_store_bytes
from participants.models import EmploymentEvent, Participation
from payments.models import Annuity, ScheduledPayment
from pensions.selectors import brp_benefit_page
from plans.models import Plan
from statements.figures import (
    PeriodNotCredited,
    StatementNotTied,
    period_dates,
    statement_figures,
    statement_tie,
)
from statements.hooks import statement_issued
from statements.models import Statement
from statements.pdf import ANNUAL_LAYOUT, QUARTERLY_LAYOUT, annual_benefit_pdf, quarterly_pdf

JOB_QUARTERLY = "statements"
JOB_ANNUAL = "benefit_statements"
JOB_BATCH = "statements_batch"
BATCH_SIZE = 100
ACTOR = "statements job"


@dataclass
class BatchResult:
    issued: int = 0
    skipped: int = 0
    not_issued: list[dict[str, str]] = field(default_factory=list)


def _issue(
    *,
    participation: Participation,
    kind: str,
    start: dt.date,
    end: dt.date,
    data: bytes,
    layout: str,
    figures: dict,
    beginning: Decimal | None,
    ending: Decimal | None,
    now: dt.datetime,
) -> Statement | None:
    person = participation.person
    title = _title(participation, kind, start, end)
    with transaction.atomic():
        document = document_store_bytes(
            data=data,
            kind=f"statement_{kind}",
            title=title,
            template=layout,
            actor=ACTOR,
            person=person,
            obj=participation,
            now=now,
        )
        try:
            with transaction.atomic():
                statement = Statement.objects.create(
                    person=person,
                    participation=participation,
                    kind=kind,
                    period_start=start,
                    period_end=end,
                    document=document,
                    sha256=document.sha256,
                    beginning_balance=beginning,
                    ending_balance=ending,
                    figures=figures,
                    issued_at=now,
                    issued_by=ACTOR,
                )
        except IntegrityError:
            return None  # made by another worker a moment ago: one statement per plan and period
        transaction.on_commit(lambda: statement_issued.send(sender=Statement, statement=statement))
    return statement


@dataclass
class _Made:
    participation: Participation
    kind: str
    start: dt.date
    end: dt.date
    data: bytes
    layout: str
    figures: dict
    beginning: Decimal | None
    ending: Decimal | None


def _title(participation: Participation, kind: str, start: dt.date, end: dt.date) -> str:
    return (
        f"{participation.plan.code} {Statement.Kind(kind).label.lower()}, {start:%b %-d} to {end:%b %-d, %Y}"
    )


def _store_all(made: list[_Made], *, now: dt.datetime) -> int:
    """Store a batch's statements in one transaction (documents by SHA-256, then the Statement rows); if another
    worker made one of them meanwhile, fall back to one at a time. Returns how many were made."""
    if not made:
        return 0
    try:
        with transaction.atomic():
            documents = documents_store_bytes(
                items=[
                    {
                        "data": m.data,
                        "kind": f"statement_{m.kind}",
                        "title": _title(m.participation, m.kind, m.start, m.end),
                        "template": m.layout,
                        "person": m.participation.person,
                        "obj": m.participation,
                    }
                    for m in made
                ],
                actor=ACTOR,
                now=now,
            )
            statements = Statement.objects.bulk_create(
                [
                    Statement(
                        person=m.participation.person,
                        participation=m.participation,
                        kind=m.kind,
                        period_start=m.start,
                        period_end=m.end,
                        document=doc,
                        sha256=doc.sha256,
                        beginning_balance=m.beginning,
                        ending_balance=m.ending,
                        figures=m.figures,
                        issued_at=now,
                        issued_by=ACTOR,
                    )
                    for m, doc in zip(made, documents, strict=True)
                ]
            )
            for statement in statements:
                transaction.on_commit(
                    lambda s=statement: statement_issued.send(sender=Statement, statement=s)  # type: ignore[misc]
                )
        return len(statements)
    except IntegrityError:
        return sum(
            _issue(
                participation=m.participation,
                kind=m.kind,
                start=m.start,
                end=m.end,
                data=m.data,
                layout=m.layout,
                figures=m.figures,
                beginning=m.beginning,
                ending=m.ending,
                now=now,
            )
            is not None
            for m in made
        )


def _share_plans(participations: list[Participation]) -> None:
    """One Plan object per plan for the batch, so its versions and provisions are read once, not per participant."""
    plans: dict[int, Plan] = {}
    for participation in participations:
        participation.plan = plans.setdefault(participation.plan_id, participation.plan)


def _already(ids: list[int], kind: str, end: dt.date) -> set[int]:
    return set(
        Statement.objects.filter(participation_id__in=ids, kind=kind, period_end=end).values_list(
            "participation_id", flat=True
        )
    )


def statement_reference(*, participation: Participation, kind: str, period_end: dt.date) -> str:
    return f"{participation.plan.code}-{participation.person.employee_number}-{kind[0].upper()}{period_end:%Y%m%d}"


def quarterly_statements_issue(
    *, participation_ids: list[int], period_end: dt.date, now: dt.datetime
) -> BatchResult:
    """The quarter's statements of a batch of account-plan participations (EDCP, RRP)."""
    result = BatchResult()
    done = _already(participation_ids, Statement.Kind.QUARTERLY, period_end)
    todo = list(
        Participation.objects.filter(id__in=participation_ids)
        .exclude(id__in=done)
        .select_related("person", "plan")
        .order_by("id")
    )
    result.skipped = len(participation_ids) - len(todo)
    if not todo:
        return result
    _share_plans(todo)
    all_figures = statement_figures(participations=todo, period_end=period_end)
    made: list[_Made] = []
    for participation in todo:
        figures = all_figures[participation.id]
        try:
            statement_tie(figures=figures)
        except StatementNotTied as exc:
            result.not_issued.append(
                {
                    "participation": str(participation.id),
                    "account": f"{participation} {exc.account}",
                    "reason": exc.detail,
                }
            )
            continue
        data = quarterly_pdf(
            figures=figures,
            reference=statement_reference(
                participation=participation, kind="quarterly", period_end=period_end
            ),
        )
        kept = {
            "beginning": str(figures.total("beginning")),
            "credits": {k: str(v) for k, v in figures.credits_by_source().items()},
            "earnings": str(figures.total("earnings")),
            "distributions": str(figures.total("distributions")),
            "forfeitures": str(figures.total("forfeitures")),
            "ending": str(figures.total("ending")),
            "vested": str(figures.vested),
            "unvested": str(figures.unvested),
            "return_quarter": str(figures.quarter.rate) if figures.quarter else None,
            "return_year": str(figures.year.rate) if figures.year else None,
        }
        made.append(
            _Made(
                participation=participation,
                kind=Statement.Kind.QUARTERLY,
                start=figures.period_start,
                end=period_end,
                data=data,
                layout=QUARTERLY_LAYOUT,
                figures=kept,
                beginning=figures.total("beginning"),
                ending=figures.total("ending"),
            )
        )
    result.issued = _store_all(made, now=now)
    result.skipped += len(made) - result.issued
    return result


def annual_benefit_data(*, participation: Participation, as_of: dt.date) -> dict:
    """What the BRP annual statement shows, from the pensions services (the plan's basis) and the payments."""
    page = brp_benefit_page(participation=participation, today=as_of)
    year_start = dt.date(as_of.year, 1, 1)
    paid = list(
        ScheduledPayment.objects.filter(
            participation=participation, paid_on__gte=year_start, paid_on__lte=as_of
        )
        .exclude(status=ScheduledPayment.Status.CANCELLED)
        .order_by("paid_on", "id")
    )
    totals = {
        "gross": money(sum((p.amount or ZERO for p in paid), ZERO)),
        "federal": money(sum((p.federal_withholding or ZERO for p in paid), ZERO)),
        "state": money(sum((p.state_withholding or ZERO for p in paid), ZERO)),
        "net": money(sum((p.net_amount or ZERO for p in paid), ZERO)),
    }
    designation = (
        participation.person.beneficiary_designations.filter(plan=participation.plan)
        .order_by("-received_at", "-id")
        .first()
    )
    beneficiaries = (
        [f"{b.get_tier_display()}: {b.name}, {b.percent}%" for b in designation.beneficiaries.all()]
        if designation
        else ["None on file: the plan's default beneficiary applies."]
    )
    annuity = page["annuity"] or Annuity.objects.filter(participation=participation).first()
    return {
        "participation": participation,
        "version": page["version"],
        "as_of": as_of,
        "in_pay": page["in_pay"],
        "annuity": annuity,
        "monthly": getattr(annuity, "monthly", None),
        "quote": page["quote"],
        "error": page["error"],
        "paid": paid,
        "totals": totals,
        "beneficiaries": beneficiaries,
    }


def annual_statements_issue(
    *, participation_ids: list[int], period_end: dt.date, now: dt.datetime
) -> BatchResult:
    """The BRP annual benefit statements of a batch, as of December 31 (`period_end`)."""
    result = BatchResult()
    done = _already(participation_ids, Statement.Kind.ANNUAL_BENEFIT, period_end)
    todo = list(
        Participation.objects.filter(id__in=participation_ids)
        .exclude(id__in=done)
        .select_related("person", "plan")
        .order_by("id")
    )
    result.skipped = len(participation_ids) - len(todo)
    _share_plans(todo)
    for participation in todo:
        data = annual_benefit_data(participation=participation, as_of=period_end)
        if (
            data["in_pay"]
            and data["totals"]["gross"] - data["totals"]["federal"] - data["totals"]["state"]
            != data["totals"]["net"]
        ):
            result.not_issued.append(
                {
                    "participation": str(participation.id),
                    "account": str(participation),
                    "reason": "gross less withholding is not net",
                }
            )
            continue
        pdf = annual_benefit_pdf(
            data=data,
            reference=statement_reference(participation=participation, kind="annual", period_end=period_end),
        )
        quote = data["quote"]
        kept = {
            "in_pay": data["in_pay"],
            "single_life_annual": str(quote.single_life_annual) if quote else None,
            "paid": {k: str(v) for k, v in data["totals"].items()},
        }
        made = _issue(
            participation=participation,
            kind=Statement.Kind.ANNUAL_BENEFIT,
            start=dt.date(period_end.year, 1, 1),
            end=period_end,
            data=pdf,
            layout=ANNUAL_LAYOUT,
            figures=kept,
            beginning=None,
            ending=None,
            now=now,
        )
        result.skipped += made is None
        result.issued += made is not None
    return result


# --- the job: a period in bounded batches across workers -------------------------------------------------


def _participations(kind: str, period_end: dt.date) -> list[int]:
    """Who gets a statement: account plans (quarterly) or defined benefit plans (annual), entered by the period's
    end and not dead before it began."""
    plan_kind = Plan.Kind.ACCOUNT_BALANCE if kind == JOB_QUARTERLY else Plan.Kind.DEFINED_BENEFIT
    start = (
        dt.date(period_end.year, 1, 1)
        if kind == JOB_ANNUAL
        else dt.date(period_end.year, period_end.month - 2, 1)
    )
    dead = EmploymentEvent.objects.filter(kind=EmploymentEvent.Kind.DEATH, effective_date__lt=start).values(
        "person_id"
    )
    return list(
        Participation.objects.filter(plan__kind=plan_kind, entered_on__lte=period_end)
        .exclude(person_id__in=dead)
        .filter(Q(accounts__isnull=False) if kind == JOB_QUARTERLY else Q())
        .distinct()
        .order_by("id")
        .values_list("id", flat=True)
    )


def statements_period_check(*, kind: str, period_end: dt.date) -> None:
    """A refusal (with its reason) when the period cannot be stated yet."""
    if kind == JOB_QUARTERLY:
        period_dates(period_end=period_end)
    elif (period_end.month, period_end.day) != (12, 31):
        raise ValueError(f"{period_end}: the annual benefit statement is as of December 31")


def _batch_key(period_end: dt.date, kind: str, number: int) -> str:
    return f"{period_end.isoformat()}:{kind}:{number:05d}"


def statements_period_start(
    *, kind: str, period_end: dt.date, now: dt.datetime, dispatch: Callable[[list], None]
) -> JobRun:
    """Claim the period's run, split its participations into batches of BATCH_SIZE and hand each to `dispatch`
    (a list of (kind, period end, batch number, participation ids); the task queues them after commit)."""
    with job_lock(f"{kind}:{period_end.isoformat()}"):
        run = job_claim(kind=kind, key=period_end.isoformat(), now=now)
        if run.status == JobRun.Status.DONE:
            return run
        job_item(run, "listing participants")
        try:
            statements_period_check(kind=kind, period_end=period_end)
        except (ValueError, PeriodNotCredited) as exc:
            return job_finish(run, status=JobRun.Status.REFUSED, message=str(exc))
        ids = _participations(kind, period_end)
        batches = [ids[i : i + BATCH_SIZE] for i in range(0, len(ids), BATCH_SIZE)]
        run.progress_done, run.progress_total = 0, len(ids)
        run.stats = {"batches": len(batches), "participants": len(ids)}
        run.message = f"{len(ids)} participants in {len(batches)} batches"
        JobRun.objects.filter(pk=run.pk).update(
            progress_done=0, progress_total=len(ids), stats=run.stats, message=run.message
        )
        # A rerun of a failed period hands out every batch again: the batches done return at once, the others redo.
        if not batches:
            return job_finish(run, status=JobRun.Status.DONE, message="no participants", stats=run.stats)
        dispatch([(kind, period_end.isoformat(), n, batch) for n, batch in enumerate(batches, start=1)])
        return run


_PROGRESS_SQL = "UPDATE core_jobrun SET progress_done = progress_done + %s, heartbeat_at = %s WHERE id = %s"


def statements_batch_run(
    *, kind: str, period_end: dt.date, number: int, participation_ids: list[int], now: dt.datetime
) -> JobRun:
    """One batch, claimed as its own JobRun (a retry of a batch already done does nothing)."""
    key = _batch_key(period_end, kind, number)
    with job_lock(f"{JOB_BATCH}:{key}"):
        batch = job_claim(kind=JOB_BATCH, key=key, now=now)
        if batch.status == JobRun.Status.DONE:
            statements_period_settle(kind=kind, period_end=period_end)
            return batch
        job_item(batch, f"batch {number}")
        issue = quarterly_statements_issue if kind == JOB_QUARTERLY else annual_statements_issue
        result = issue(participation_ids=participation_ids, period_end=period_end, now=now)
        stats = {
            "issued": result.issued,
            "skipped": result.skipped,
            "not_issued": result.not_issued,
            "participants": len(participation_ids),
        }
        parent = JobRun.objects.get(kind=kind, key=period_end.isoformat())
        with connection.cursor() as cursor:
            cursor.execute(_PROGRESS_SQL, [len(participation_ids), now, parent.pk])
        if result.not_issued:
            names = ", ".join(x["account"] for x in result.not_issued)
            batch = job_finish(
                batch, status=JobRun.Status.FAILED, message=f"not issued (does not tie): {names}", stats=stats
            )
        else:
            batch = job_finish(
                batch, status=JobRun.Status.DONE, message=f"{result.issued} issued", stats=stats
            )
    statements_period_settle(kind=kind, period_end=period_end)
    return batch


def statements_period_settle(*, kind: str, period_end: dt.date) -> JobRun | None:
    """End the period's run once every batch has ended: done, or failed naming each account not issued."""
    parent = JobRun.objects.get(kind=kind, key=period_end.isoformat())
    expected = int((parent.stats or {}).get("batches", 0))
    batches = list(
        JobRun.objects.filter(kind=JOB_BATCH, key__startswith=f"{period_end.isoformat()}:{kind}:").exclude(
            status=JobRun.Status.RUNNING
        )
    )
    if parent.status != JobRun.Status.RUNNING or len(batches) < expected:
        return None
    issued = sum(int(b.stats.get("issued", 0)) for b in batches)
    skipped = sum(int(b.stats.get("skipped", 0)) for b in batches)
    failing = [x for b in batches for x in b.stats.get("not_issued", [])]
    crashed = [b.key for b in batches if b.status == JobRun.Status.FAILED and not b.stats.get("not_issued")]
    stats = {**parent.stats, "issued": issued, "skipped": skipped, "not_issued": failing, "crashed": crashed}
    status = JobRun.Status.FAILED if failing or crashed else JobRun.Status.DONE
    message = f"{issued} issued, {skipped} already made"
    if failing:
        message += "; not issued (does not tie): " + ", ".join(x["account"] for x in failing)
    if crashed:
        message += "; batches failed: " + ", ".join(crashed)
    # One worker ends the run: the update is conditional on the run still running.
    updated = JobRun.objects.filter(pk=parent.pk, status=JobRun.Status.RUNNING).update(
        status=status, progress_done=parent.progress_total
    )
    if not updated:
        return None
    parent.progress_done = parent.progress_total
    return job_finish(parent, status=status, message=message, stats=stats)
