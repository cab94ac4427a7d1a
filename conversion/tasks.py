"""Celery tasks of the conversion: the staff pages' dry run and apply (conversion.staff.conversion_job)."""

from __future__ import annotations

from celery import shared_task
from django.utils import timezone

from conversion.staff import TASK, conversion_job
from core.jobs import JobBusy


@shared_task(bind=True, name=TASK, acks_late=True, reject_on_worker_lost=True, max_retries=60)
def conversion_task(self, key: str) -> dict:
    """The dry run or apply that `key` names; another conversion running holds the lock: come back after it."""
    try:
        run = conversion_job(key=key, now=timezone.now())
    except JobBusy as exc:
        raise self.retry(exc=exc, countdown=min(2**self.request.retries, 60)) from exc
    return {"kind": run.kind, "key": run.key, "status": run.status, "run": (run.stats or {}).get("run")}
