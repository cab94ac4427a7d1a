"""Celery tasks of the claims: call one service, return its small summary."""

from __future__ import annotations

from celery import shared_task
from django.utils import timezone

from claims.services import claims_flag_deadlines


@shared_task(name="claims.flag_deadlines", acks_late=True, reject_on_worker_lost=True)
def flag_deadlines_task() -> dict:
    """Daily: mark abandoned claims, flag approaching or past deadlines, email the reviewers."""
    return claims_flag_deadlines(now=timezone.now())
