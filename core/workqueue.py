"""The staff work queue (issue 11): what is waiting for a person, each line with its count and a link.

Core counts its own work (failed or stale jobs, refused imports); the apps above register theirs in
AppConfig.ready() (claims: decisions due; payments: runs awaiting approval, held payments, emergencies),
so core never imports them. A provider is a function `(*, today, now) -> list[QueueLine]`.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass

from django.db.models import Q
from django.urls import reverse

from core.jobs import job_time_limit
from core.models import ImportBatch, JobRun

REFUSED_IMPORTS_DAYS = 30  # a refused file is work until a corrected one is loaded; older ones are history


@dataclass(frozen=True)
class QueueLine:
    key: str  # stable, for tests and the page's data-queue attribute
    label: str
    count: int
    url: str
    detail: str = ""
    urgent: bool = False  # overdue or failed: shown first, marked


Provider = Callable[..., list[QueueLine]]
_providers: list[Provider] = []


def work_queue_register(provider: Provider) -> None:
    if provider not in _providers:
        _providers.append(provider)


def work_queue(*, today: dt.date, now: dt.datetime) -> list[QueueLine]:
    """Every line of every provider, urgent lines first, in registration order otherwise."""
    lines = [line for provider in [_core_lines, *_providers] for line in provider(today=today, now=now)]
    return sorted(lines, key=lambda line: not line.urgent)


def _core_lines(*, today: dt.date, now: dt.datetime) -> list[QueueLine]:
    failed = JobRun.objects.filter(status=JobRun.Status.FAILED).count()
    stale = JobRun.objects.filter(
        status=JobRun.Status.RUNNING, heartbeat_at__lt=now - job_time_limit("")
    ).count()
    since = now - dt.timedelta(days=REFUSED_IMPORTS_DAYS)
    refused = ImportBatch.objects.filter(Q(status=ImportBatch.Status.REFUSED) & Q(uploaded_at__gte=since))
    return [
        QueueLine(
            key="jobs",
            label="Failed or stale jobs",
            count=failed + stale,
            url=reverse("core:job_runs"),
            detail=f"{failed} failed, {stale} stale (no progress within the time limit)",
            urgent=bool(failed + stale),
        ),
        QueueLine(
            key="imports",
            label="Refused imports",
            count=refused.count(),
            url=reverse("core:imports") + "?status=refused",
            detail=f"files refused in the last {REFUSED_IMPORTS_DAYS} days: correct every named row and load again",
        ),
    ]
