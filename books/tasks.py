"""Celery tasks of the books: load by key, call one service, return a small JSON summary."""

from __future__ import annotations

import datetime as dt

from celery import shared_task
from django.utils import timezone

from books.services.crediting import credit_due_dates, credit_valuation_date
from core.jobs import JobBusy


def _summary(run) -> dict:
    return {
        "kind": run.kind,
        "key": run.key,
        "status": run.status,
        "message": run.message,
        "stats": run.stats,
    }


@shared_task(
    bind=True, name="books.credit_valuation_date", acks_late=True, reject_on_worker_lost=True, max_retries=20
)
def credit_valuation_date_task(self, valuation_date: str) -> dict:
    try:
        return _summary(credit_valuation_date(valuation_date=dt.date.fromisoformat(valuation_date)))
    except JobBusy as exc:
        # Another worker holds the crediting lock: another date, or the last statement of a killed
        # worker that the server is still finishing. Come back rather than drop the date.
        raise self.retry(exc=exc, countdown=min(2**self.request.retries, 60))


@shared_task(name="books.credit_due_dates", acks_late=True, reject_on_worker_lost=True)
def credit_due_dates_task() -> list[dict]:
    """Beat: after prices arrive, credit every Valuation Date up to today, in order."""
    today = timezone.localdate()
    try:
        return [_summary(r) for r in credit_due_dates(through=today)]
    except JobBusy as exc:
        return [{"kind": "crediting", "status": "busy", "message": str(exc)}]
