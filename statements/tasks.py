"""Celery tasks of the statements: load by key, call one service, return a small JSON summary."""

from __future__ import annotations

import datetime as dt

from celery import shared_task
from django.db import transaction
from django.utils import timezone

from core.jobs import JobBusy
from statements.services import JOB_ANNUAL, JOB_QUARTERLY, statements_batch_run, statements_period_start


def _summary(run) -> dict:
    return {"kind": run.kind, "key": run.key, "status": run.status, "message": run.message}


def _start(self, kind: str, period_end: str) -> dict:
    queue = (self.request.delivery_info or {}).get("routing_key") or None

    def dispatch(batches: list) -> None:
        # Queued once the claim commits, on the queue this task came from (a bench or test queue stays apart).
        def send() -> None:
            for args in batches:
                statements_batch_task.apply_async(args=list(args), queue=queue)

        transaction.on_commit(send)

    try:
        run = statements_period_start(
            kind=kind, period_end=dt.date.fromisoformat(period_end), now=timezone.now(), dispatch=dispatch
        )
    except JobBusy as exc:
        raise self.retry(exc=exc, countdown=min(2**self.request.retries, 60)) from exc
    return _summary(run)


@shared_task(
    bind=True, name="statements.quarterly", acks_late=True, reject_on_worker_lost=True, max_retries=20
)
def quarterly_statements_task(self, period_end: str) -> dict:
    """The quarter's statements (EDCP, RRP) for the quarter ending `period_end`, in batches across workers."""
    return _start(self, JOB_QUARTERLY, period_end)


@shared_task(
    bind=True, name="statements.annual_benefit", acks_late=True, reject_on_worker_lost=True, max_retries=20
)
def annual_statements_task(self, period_end: str) -> dict:
    """The BRP annual benefit statements as of December 31 (`period_end`)."""
    return _start(self, JOB_ANNUAL, period_end)


@shared_task(bind=True, name="statements.batch", acks_late=True, reject_on_worker_lost=True, max_retries=20)
def statements_batch_task(
    self, kind: str, period_end: str, number: int, participation_ids: list[int]
) -> dict:
    try:
        run = statements_batch_run(
            kind=kind,
            period_end=dt.date.fromisoformat(period_end),
            number=number,
            participation_ids=participation_ids,
            now=timezone.now(),
        )
    except JobBusy as exc:
        raise self.retry(exc=exc, countdown=min(2**self.request.retries, 60)) from exc
    return _summary(run)


@shared_task(name="statements.due", acks_late=True, reject_on_worker_lost=True)
def statements_due_task() -> list[dict]:
    """Beat: after a quarter ends, start its statements (and the BRP's on January's run); a period not yet
    credited is refused and tried again on the next day's run."""
    today = timezone.localdate()
    quarter_end = dt.date(today.year, ((today.month - 1) // 3) * 3 + 1, 1) - dt.timedelta(days=1)
    quarterly_statements_task.delay(quarter_end.isoformat())
    if quarter_end.month == 12:
        annual_statements_task.delay(quarter_end.isoformat())
    return [{"kind": JOB_QUARTERLY, "key": quarter_end.isoformat()}]
