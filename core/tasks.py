"""Celery tasks of core: a staff report prepared as a file (core.report_files)."""

from __future__ import annotations

from celery import shared_task
from django.utils import timezone

from core.jobs import JobBusy
from core.report_files import TASK, report_file_run


@shared_task(bind=True, name=TASK, acks_late=True, reject_on_worker_lost=True, max_retries=20)
def report_file_task(self, name: str, *args: str) -> dict:
    """Prepare report `name` for its parameters as a CSV Document (the same parameters: the same run)."""
    try:
        run = report_file_run(name=name, args=list(args), now=timezone.now())
    except JobBusy as exc:
        raise self.retry(exc=exc, countdown=min(2**self.request.retries, 60)) from exc
    return {
        "kind": run.kind,
        "key": run.key,
        "status": run.status,
        "document": (run.stats or {}).get("document"),
    }
