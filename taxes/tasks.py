"""Celery tasks of the taxes app: load, call one service, return a small JSON summary."""

from __future__ import annotations

from celery import shared_task
from django.utils import timezone

from core.jobs import JobBusy, job_lock
from taxes.services.fica import fica_wages_record


@shared_task(name="taxes.record_fica_wages", acks_late=True, reject_on_worker_lost=True)
def record_fica_wages_task() -> dict:
    """After the day's crediting: bring the FICA rows up to date with the books (idempotent; one worker at a time)."""
    try:
        with job_lock("taxes.record_fica_wages"):
            result = fica_wages_record(through=timezone.localdate(), now=timezone.now())
    except JobBusy as exc:
        return {"status": "busy", "message": str(exc)}
    return {
        "status": "done",
        "written": result.written,
        "corrections": result.corrections,
        "unchanged": result.unchanged,
    }
