"""Periodic tasks, kept in the database by django-celery-beat. Each app lists its own in <app>/schedules.py:

    SCHEDULES = [Schedule(name="...", task="books.credit_due_dates", crontab="30 18 * * 1-5")]

`manage.py sync_schedules` (run by `make run` and at deploy) creates or updates them; staff can pause
or move them in the admin afterwards (a later sync does not undo a paused task's `enabled`).

The same module lists the JobRun-claimed jobs staff may start from the job pages (retry a failed run,
run a due day now): `JOBS = [JobKind(kind="crediting", task="books.credit_valuation_date", ...)]`.
The task takes the run's key (an ISO date) as its one argument and claims it as the scheduled run does.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass

from django_celery_beat.models import CrontabSchedule, PeriodicTask

from core.dates import EASTERN_NAME

APPS = ("books", "payments", "claims", "elections", "participants", "plans", "statements")


@dataclass(frozen=True)
class Schedule:
    name: str
    task: str
    crontab: str  # "minute hour day_of_month month day_of_week", America/New_York
    description: str = ""


@dataclass(frozen=True)
class JobKind:
    kind: str  # JobRun.kind
    task: str  # the Celery task run with the key (an ISO date): the same claim and lock as the beat's run
    label: str
    key_label: str = "Date"


def _modules():
    for app in APPS:
        try:
            yield importlib.import_module(f"{app}.schedules")
        except ModuleNotFoundError as exc:
            if exc.name != f"{app}.schedules":
                raise


def all_schedules() -> list[Schedule]:
    out: list[Schedule] = []
    for module in _modules():
        out.extend(getattr(module, "SCHEDULES", []))
    return out


def job_kinds() -> dict[str, JobKind]:
    """The jobs staff may retry or run now, by JobRun kind."""
    return {job.kind: job for module in _modules() for job in getattr(module, "JOBS", [])}


def schedules_sync() -> list[str]:
    done = []
    for s in all_schedules():
        minute, hour, dom, month, dow = s.crontab.split()
        cron, _ = CrontabSchedule.objects.get_or_create(
            minute=minute,
            hour=hour,
            day_of_month=dom,
            month_of_year=month,
            day_of_week=dow,
            timezone=EASTERN_NAME,
        )
        task, created = PeriodicTask.objects.get_or_create(
            name=s.name, defaults={"task": s.task, "crontab": cron, "description": s.description}
        )
        if not created and (task.task != s.task or task.crontab_id != cron.id):
            task.task, task.crontab, task.description = s.task, cron, s.description
            task.save()
        done.append(s.name)
    return done
