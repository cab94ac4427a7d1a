"""Celery tasks of payments: load by key, call one service, return a small JSON summary."""

from __future__ import annotations

import datetime as dt

from celery import shared_task
from django.utils import timezone

from core.jobs import JobBusy
from payments.services.day import production_day_run


@shared_task(
    bind=True, name="payments.process_day", acks_late=True, reject_on_worker_lost=True, max_retries=20
)
def process_day_task(self, day: str | None = None) -> dict:
    """Beat, every morning before the evening crediting: schedules, valuation, holds, paid payments."""
    when = dt.date.fromisoformat(day) if day else timezone.localdate()
    try:
        # The morning of the production day; the run is two people's work on the payments page, and the
        # evening's crediting is books.credit_due_dates (the same step production_day_run ends with).
        now = timezone.now()
        run = production_day_run(as_of=when, at=lambda hour: now, credit=False).payments_job
    except JobBusy as exc:
        # Another worker holds the payment job's lock (or a killed worker's last statement is still
        # finishing on the server): come back rather than drop the day.
        raise self.retry(exc=exc, countdown=min(2**self.request.retries, 60))
    if run is None:
        return {"kind": "payments", "key": when.isoformat(), "status": "idle", "message": "nothing due"}
    return {
        "kind": run.kind,
        "key": run.key,
        "status": run.status,
        "message": run.message,
        "stats": run.stats,
    }


@shared_task(
    bind=True, name="payments.send_advice", acks_late=True, reject_on_worker_lost=True, max_retries=20
)
def payment_advice_task(self, run_id: int) -> dict:
    """After a run is released: the payment advice of each participant and named payee paid in it, as a claimed
    job (once per run; a failed run resumes where it stopped)."""
    from payments.models import PaymentRun  # noqa: PLC0415 - models load after the app registry; tasks import early
    from payments.services.advice import payment_advice_job  # noqa: PLC0415 - see above

    try:
        job = payment_advice_job(
            run=PaymentRun.objects.get(pk=run_id), actor="payments worker", now=timezone.now()
        )
    except JobBusy as exc:  # another worker sends this run's advice now: come back rather than drop it
        raise self.retry(exc=exc, countdown=min(2**self.request.retries, 60))
    return {
        "kind": job.kind,
        "key": job.key,
        "status": job.status,
        "message": job.message,
        "stats": job.stats,
    }
