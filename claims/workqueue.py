"""The claims line of the staff work queue (core.workqueue): decisions due within 14 days or overdue.
Registered in ClaimsConfig.ready()."""

from __future__ import annotations

import datetime as dt

from django.urls import reverse

from claims.models import AWAITING_DECISION, AWAITING_REVIEW, Claim
from core.workqueue import QueueLine

DUE_WITHIN_DAYS = 14


def claims_work_queue(*, today: dt.date, now: dt.datetime) -> list[QueueLine]:
    """Claims and appeals awaiting the plan's decision whose running deadline (the claims procedure of the
    plan: EDCP 11.2, BRP 7.2, RRP 7.02) falls within 14 days or has passed. A period tolled while the
    claimant's information is awaited has no running deadline and is not counted."""
    waiting = Claim.objects.filter(
        state__in=[*AWAITING_DECISION, *AWAITING_REVIEW],
        next_deadline_on__isnull=False,
        next_deadline_on__lte=today + dt.timedelta(days=DUE_WITHIN_DAYS),
    )
    overdue = waiting.filter(next_deadline_on__lt=today).count()
    return [
        QueueLine(
            key="claims",
            label=f"Claims due within {DUE_WITHIN_DAYS} days or overdue",
            count=waiting.count(),
            url=reverse("claims_staff:queue"),
            detail=f"{overdue} overdue" if overdue else "none overdue",
            urgent=bool(overdue),
        )
    ]
