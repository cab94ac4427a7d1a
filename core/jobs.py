"""Claiming batch work: a unique JobRun row per (kind, key) and a lock so two workers never overlap.

PostgreSQL: a session-level advisory lock, released by the server if the worker dies, so a killed
worker never blocks the retry. SQLite (the embedded demo) serialises writers by itself.
`job_locked_claim` takes the lock, claims and runs the caller's read in one round trip, and
`LockedRun.finish` records the end and releases the lock in one (a daily job runs thousands of
times in a simulation); `job_lock` + `job_claim` + `job_finish` do the same in more.

Every claimed run ends done, refused or failed: an exception inside the lock records `failed` with
the error and the item the run stopped on (`job_item`, `job_progress`) before the lock is released,
and is raised again (Celery and the logs see it with its traceback). A run whose worker vanished
(SIGKILL, a lost machine) stays `running` with an old heartbeat: `job_is_stale` tells it, the staff
pages show it, and a retry claims it again (the advisory lock died with the worker's connection).
"""

from __future__ import annotations

import contextlib
import contextvars
import datetime as dt
import hashlib
import json
import logging
import os
import socket
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from celery import current_app
from celery.contrib.django.task import DjangoTask
from django.conf import settings
from django.db import InterfaceError, OperationalError, connection, transaction
from django.db.models import Case, F, QuerySet, Value, When
from django.utils import timezone

from core.audit import audit_record
from core.errors import ApplicationError
from core.models import JobRun
from core.schedules import JobKind, job_kinds

logger = logging.getLogger(__name__)

# The runs claimed under the innermost job_lock, so that an exception leaving the lock marks them failed.
_CLAIMED: contextvars.ContextVar[list[JobRun] | None] = contextvars.ContextVar("job_claimed", default=None)
# The tasks queued inside `tasks_held`: recorded here instead of being sent to the broker.
_HELD: contextvars.ContextVar[list[HeldTask] | None] = contextvars.ContextVar("tasks_held", default=None)


@dataclass(frozen=True)
class HeldTask:
    """A task queued inside `tasks_held`: what would have been sent."""

    name: str
    args: tuple
    kwargs: dict


@contextlib.contextmanager
def tasks_held() -> Iterator[list[HeldTask]]:
    """Within: a task queued (`delay`, `apply_async`, and their on-commit forms when the commit comes inside) is
    recorded in the list yielded and never sent to the broker.

    For the simulator: it replays plan life in a scratch database, and a message naming one of its rows (the advice
    of payment run 4, the confirmation of election 12) would reach the real broker and a real worker, which would
    look that id up in the real books.
    """
    held: list[HeldTask] = []
    token = _HELD.set(held)
    try:
        yield held
    finally:
        _HELD.reset(token)


class JobBusy(RuntimeError):
    """Another worker holds the lock for this job."""


def _lock_id(name: str) -> int:
    return int.from_bytes(hashlib.sha256(name.encode()).digest()[:8], "big", signed=True)


@contextlib.contextmanager
def job_lock(name: str) -> Iterator[None]:
    """Hold the job's lock; a run claimed inside (job_claim) that is still running when an exception
    leaves is recorded failed, before the lock is released."""
    claimed: list[JobRun] = []
    token = _CLAIMED.set(claimed)
    try:
        if connection.vendor != "postgresql":
            with _failures_recorded(claimed):
                yield
            return
        lock_id = _lock_id(name)
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_try_advisory_lock(%s)", [lock_id])
            if not cursor.fetchone()[0]:
                raise JobBusy(f"{name} is running in another worker")
        try:
            with _failures_recorded(claimed):
                yield
        except BaseException:
            _unlock_quietly(lock_id)
            raise
        _unlock(lock_id)
    finally:
        _CLAIMED.reset(token)


@contextlib.contextmanager
def _failures_recorded(runs: list[JobRun]) -> Iterator[None]:
    try:
        yield
    except Exception as exc:
        for run in runs:
            if run.status == JobRun.Status.RUNNING:
                job_fail(run, error=exc)
        raise


def _unlock_quietly(lock_id: int) -> None:
    """Release the lock on the way out of a failure, never hiding it (on a lost connection the lock is gone)."""
    try:
        _unlock(lock_id)
    except Exception:
        logger.warning("could not release job lock %s after a failure", lock_id, exc_info=True)


def worker_name() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


_CLAIM_SQL = """
INSERT INTO core_jobrun (kind, key, status, progress_done, progress_total, message, attempts, worker,
                         started_at, heartbeat_at, stats)
VALUES (%s, %s, 'running', 3, 4, 'valuation', 1, %s, %s, %s, '{}')
ON CONFLICT (kind, key) DO UPDATE SET status = 'running', attempts = core_jobrun.attempts + 1,
    worker = excluded.worker, heartbeat_at = excluded.heartbeat_at, message = '', finished_at = NULL
WHERE core_jobrun.status <> 'done'
RETURNING id, attempts
"""


def job_claim(*, kind: str, key: str, now: dt.datetime | None = None) -> JobRun:
    """Claim (kind, key) in one statement; a run already done is returned as it is (the caller does nothing)."""
    now = now or timezone.now()
    with connection.cursor() as cursor:
        cursor.execute(_CLAIM_SQL, [kind, key, worker_name(), now, now])
        row = cursor.fetchone()
    if row is None:
        return JobRun.objects.get(kind=kind, key=key)
    run = JobRun(
        id=row[0],
        kind=kind,
        key=key,
        status=JobRun.Status.RUNNING,
        attempts=row[1],
        started_at=now,
        heartbeat_at=now,
    )
    claimed = _CLAIMED.get()
    if claimed is not None:
        claimed.append(run)
    return run


_LOCKED_CLAIM_SQL = """
WITH lock AS (SELECT pg_try_advisory_lock(%(job_lock)s) AS got),
claim AS (
    INSERT INTO core_jobrun (kind, key, status, progress_done, progress_total, message, attempts, worker,
                             started_at, heartbeat_at, stats)
    SELECT %(job_kind)s, %(job_key)s, 'running', 3, 4, 'valuation', 1, %(job_worker)s, %(job_now)s, %(job_now)s, '{{}}'
    FROM lock WHERE got
    ON CONFLICT (kind, key) DO UPDATE SET status = 'running', attempts = core_jobrun.attempts + 1,
        worker = excluded.worker, heartbeat_at = excluded.heartbeat_at, message = '', finished_at = NULL
    WHERE core_jobrun.status <> 'done'
    RETURNING id, attempts
)
SELECT lock.got, claim.id, claim.attempts{reads_columns} FROM lock LEFT JOIN claim ON true{reads_join}
"""

_FINISH_SQL = (
    "UPDATE core_jobrun SET status = %s, message = %s, finished_at = %s, heartbeat_at = %s, "
    "stats = %s, progress_done = %s, progress_total = %s WHERE id = %s"
)
# The lock goes with the finish: a worker that takes it before this statement commits and claims the
# same key waits on the row being updated, then sees it done.
_FINISH_UNLOCK_SQL = f"WITH finished AS ({_FINISH_SQL}) SELECT pg_advisory_unlock(%s)"


@dataclass
class LockedRun:
    """A claimed run under its lock. `reads` holds the row of the caller's read, taken in the same statement."""

    run: JobRun
    reads: tuple
    lock_id: int | None
    locked: bool

    def finish(self, *, status: str, message: str = "", stats: dict | None = None) -> JobRun:
        """job_finish, and the lock released by the same statement."""
        if not self.locked:
            return job_finish(self.run, status=status, message=message, stats=stats)
        run = job_finish(self.run, status=status, message=message, stats=stats, unlock=self.lock_id)
        self.locked = False
        return run


@contextlib.contextmanager
def job_locked_claim(
    *,
    lock: str,
    kind: str,
    key: str,
    now: dt.datetime | None = None,
    reads: str = "",
    params: dict | None = None,
) -> Iterator[LockedRun]:
    """`with job_lock(lock): run = job_claim(kind=kind, key=key)` in one statement, with the caller's read.

    `reads` is a SELECT returning one row (named parameters from `params`); on PostgreSQL it runs in
    the claiming statement, so its snapshot may be a moment older than the lock: callers take it as
    a hint and look again before acting on anything another worker could have just changed.
    The claim itself reads the latest committed JobRun row (ON CONFLICT sees past the snapshot), so
    a run another worker finished just before we got the lock is seen as done. The lock is released
    by `LockedRun.finish`, or on exit.
    """
    now = now or timezone.now()
    if connection.vendor != "postgresql":
        with job_lock(lock):
            run = job_claim(kind=kind, key=key, now=now)
            row: tuple = ()
            if reads:
                with connection.cursor() as cursor:
                    cursor.execute(reads, params or {})
                    row = tuple(cursor.fetchone())
            yield LockedRun(run=run, reads=row, lock_id=None, locked=False)
        return
    lock_id = _lock_id(lock)
    sql = _LOCKED_CLAIM_SQL.format(
        reads_columns=", reads.*" if reads else "", reads_join=f" CROSS JOIN ({reads}) reads" if reads else ""
    )
    try:
        with connection.cursor() as cursor:
            cursor.execute(
                sql,
                {
                    **(params or {}),
                    "job_lock": lock_id,
                    "job_kind": kind,
                    "job_key": key,
                    "job_worker": worker_name(),
                    "job_now": now,
                },
            )
            got, run_id, attempts, *row = cursor.fetchone()
    except BaseException:
        with contextlib.suppress(
            Exception
        ):  # the lock is not transactional: it may be held though the claim failed
            _unlock(lock_id)
        raise
    if not got:
        raise JobBusy(f"{lock} is running in another worker")
    claimed = LockedRun(
        run=JobRun(
            id=run_id,
            kind=kind,
            key=key,
            status=JobRun.Status.RUNNING,
            attempts=attempts,
            started_at=now,
            heartbeat_at=now,
        ),
        reads=tuple(row),
        lock_id=lock_id,
        locked=True,
    )
    try:
        if run_id is None:
            claimed.run = JobRun.objects.get(kind=kind, key=key)
        yield claimed
    except BaseException as exc:
        if isinstance(exc, Exception) and claimed.run.status == JobRun.Status.RUNNING:
            # The failure is written and the lock released in one statement, as a finish is.
            job_fail(claimed.run, error=exc, unlock=lock_id if claimed.locked else None)
            claimed.locked = claimed.locked and claimed.run.status != JobRun.Status.FAILED
        if claimed.locked:
            _unlock_quietly(lock_id)
        raise
    if claimed.locked:
        _unlock(lock_id)


def _unlock(lock_id: int) -> None:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_unlock(%s)", [lock_id])


def job_item(run: JobRun, item: str) -> None:
    """Name what the run works on now (a phase, an account), so a failure says where it stopped. No query."""
    run.item = item


def job_progress(run: JobRun, *, done: int, total: int, message: str = "") -> None:
    run.progress_done, run.progress_total, run.message = done, total, message or run.message
    job_item(run, run.message)
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE core_jobrun SET progress_done = %s, progress_total = %s, message = %s, heartbeat_at = %s "
            "WHERE id = %s",
            [done, total, run.message, timezone.now(), run.id],
        )


def job_finish(
    run: JobRun, *, status: str, message: str = "", stats: dict | None = None, unlock: int | None = None
) -> JobRun:
    """Record the run's end; with `unlock` (a held advisory lock id), release it in the same statement."""
    now = timezone.now()
    run.status, run.message, run.finished_at, run.heartbeat_at = status, message, now, now
    if stats is not None:
        run.stats = stats
    if status == JobRun.Status.DONE:
        run.progress_done = run.progress_total = max(run.progress_total, 1)
    params: list[Any] = [
        status,
        message,
        now,
        now,
        json.dumps(run.stats or {}),
        run.progress_done,
        run.progress_total,
        run.id,
    ]
    with connection.cursor() as cursor:
        if unlock is None:
            cursor.execute(_FINISH_SQL, params)
        else:
            cursor.execute(_FINISH_UNLOCK_SQL, [*params, unlock])
    return run


def job_fail(run: JobRun, *, error: BaseException, unlock: int | None = None) -> JobRun:
    """Record that the run stopped on `error`, with the item it was working on; the caller raises it again.

    Written in a savepoint when the caller holds a transaction (the simulator, a test), so the failure
    survives on the connection it shares; a worker whose connection died writes it on a new one; if it
    cannot be written at all the run stays `running` and its old heartbeat makes it stale.
    """
    item = getattr(run, "item", "") or run.message or "start"
    reason = f"{type(error).__name__}: {error}"
    with contextlib.suppress(AttributeError):
        error.job_run_recorded = True  # type: ignore[attr-defined]  # RecordedTask.on_failure: already told
    logger.error("%s %s failed on %s: %s", run.kind, run.key, item, reason, exc_info=error)
    stats = {**(run.stats or {}), "error": reason, "stopped_on": item}
    message = f"failed on {item}: {reason}"
    try:
        if connection.in_atomic_block:
            with transaction.atomic():
                job_finish(run, status=JobRun.Status.FAILED, message=message, stats=stats)
            if unlock is not None:
                _unlock(unlock)
        else:
            try:
                job_finish(run, status=JobRun.Status.FAILED, message=message, stats=stats, unlock=unlock)
            except (InterfaceError, OperationalError):
                # The connection died (the database restarted) and its advisory lock with it: say so on a
                # new connection rather than leave the run to go stale.
                connection.close()
                job_finish(run, status=JobRun.Status.FAILED, message=message, stats=stats)
    except Exception:
        run.status = JobRun.Status.RUNNING
        logger.warning("could not record the failure of %s %s", run.kind, run.key, exc_info=True)
    return run


def job_time_limit(kind: str) -> dt.timedelta:
    """How long a run may go without progress before it is taken for stale (its worker vanished)."""
    seconds = getattr(settings, "CELERY_TASK_TIME_LIMIT", None) or 2 * 3600
    return dt.timedelta(seconds=seconds)


def job_is_stale(run: JobRun, *, now: dt.datetime) -> bool:
    """A running run without progress for longer than its time limit: its worker is gone."""
    return run.status == JobRun.Status.RUNNING and run.heartbeat_at < now - job_time_limit(run.kind)


# --- staff actions: retry a run, run a due day now -------------------------------------------------


class JobRefused(ApplicationError):
    """A retry or run-now the job pages refuse; the message says why."""


def _job_kind(kind: str) -> JobKind:
    job = job_kinds().get(kind)
    if job is None:
        raise JobRefused(f"No task starts a {kind} run from the staff pages.")
    return job


def _task(name: str):
    current_app.loader.import_default_modules()  # the apps' tasks modules, in a web process too
    return current_app.tasks[name]


def _queue(job: JobKind, key: str) -> None:
    """Queue the job's task for `key` once the transaction commits: the task claims and locks the key
    exactly as the scheduled run does, so a run already done changes nothing."""
    _task(job.task).delay_on_commit(key)


def _refuse_unless_free(job: JobKind, run: JobRun | None, key: str, now: dt.datetime) -> None:
    if run is None:
        return
    if run.status == JobRun.Status.DONE:
        raise JobRefused(f"{job.label} {key} is already done: nothing to run again.")
    if run.status == JobRun.Status.RUNNING and not job_is_stale(run, now=now):
        raise JobRefused(
            f"{job.label} {key} is running (last progress {timezone.localtime(run.heartbeat_at):%Y-%m-%d %H:%M:%S}): "
            "wait for it to finish; it can be retried once it has failed or gone stale."
        )


def job_retry(*, run: JobRun, actor, now: dt.datetime) -> JobKind:
    """Queue a failed, refused or stale run again, for the same key (a task's failure: with its arguments)."""
    task_name = (run.stats or {}).get("task")
    if run.kind not in job_kinds() and task_name:
        job = JobKind(kind=run.kind, task=task_name, label=run.kind)
        _refuse_unless_free(job, run, run.key, now)
        audit_record(
            action="job.retry", actor=actor, at=now, obj=run, data={"kind": run.kind, "key": run.key}
        )
        _task(task_name).apply_async_on_commit(
            args=run.stats.get("args", []), kwargs=run.stats.get("kwargs", {})
        )
        return job
    job = _job_kind(run.kind)
    _refuse_unless_free(job, run, run.key, now)
    audit_record(
        action="job.retry",
        actor=actor,
        at=now,
        obj=run,
        data={"kind": run.kind, "key": run.key, "status": run.status, "stale": job_is_stale(run, now=now)},
    )
    _queue(job, run.key)
    return job


def job_run_now(*, kind: str, day: dt.date, actor, now: dt.datetime) -> JobKind:
    """Queue a due day's job now rather than at its scheduled time (crediting for a date, the payment day)."""
    job = _job_kind(kind)
    if day > timezone.localdate(now):
        raise JobRefused(f"{job.label} {day} is not due yet: a day can be run on or after it.")
    key = day.isoformat()
    _refuse_unless_free(job, JobRun.objects.filter(kind=kind, key=key).first(), key, now)
    audit_record(action="job.run_now", actor=actor, at=now, data={"kind": kind, "key": key})
    _queue(job, key)
    return job


def job_runs_for_staff(*, now: dt.datetime, kind: str = "") -> QuerySet[JobRun]:
    """Job runs, those needing a person first (failed, then stale), then the most recent."""
    stale_before = now - job_time_limit(kind)
    attention = Case(
        When(status=JobRun.Status.FAILED, then=Value(0)),
        When(status=JobRun.Status.RUNNING, heartbeat_at__lt=stale_before, then=Value(1)),
        default=Value(2),
    )
    runs = JobRun.objects.annotate(attention=attention).order_by("attention", "-started_at", "-id")
    return runs.filter(kind=kind) if kind else runs


def job_runs_marked(runs, *, now: dt.datetime, retry_allowed: bool) -> list[JobRun]:
    """The runs with what the page shows about each: stale or not, and whether it offers a retry."""
    kinds = job_kinds()
    out = list(runs)
    for run in out:
        run.stale = job_is_stale(run, now=now)
        run.retryable = (
            retry_allowed
            and (run.kind in kinds or bool((run.stats or {}).get("task")))
            and (run.status in (JobRun.Status.FAILED, JobRun.Status.REFUSED) or run.stale)
        )
    return out


# --- tasks that claim no run ------------------------------------------------------------------------


def _task_key(args, now: dt.datetime) -> str:
    """The run's key: the task's arguments, or the day (a periodic task runs once a day)."""
    return ",".join(str(a) for a in args)[:60] if args else timezone.localdate(now).isoformat()


def job_task_failed(*, task: str, args, kwargs, error: BaseException, now: dt.datetime) -> JobRun:
    """A task that claims no JobRun (deadlines, reminders, a document) failed: record it as a failed run of
    its own kind, with what is needed to retry it."""
    reason = f"{type(error).__name__}: {error}"
    fields = {
        "status": JobRun.Status.FAILED,
        "message": f"failed: {reason}",
        "worker": worker_name(),
        "heartbeat_at": now,
        "finished_at": now,
        "stats": {
            "task": task,
            "args": list(args),
            "kwargs": dict(kwargs),
            "error": reason,
            "stopped_on": "task",
        },
    }
    run, _ = JobRun.objects.update_or_create(
        kind=task[:40],
        key=_task_key(args, now),
        defaults={**fields, "attempts": F("attempts") + 1},
        create_defaults={**fields, "started_at": now, "attempts": 1},
    )
    return run


class RecordedTask(DjangoTask):
    """The project's task class (config/celery.py): no task fails silently (STYLE 12), and none is sent from
    inside `tasks_held`.

    A job that claims a JobRun records its own failure (job_fail); any other task that raises leaves a
    failed run named after the task, which staff see and retry; a later success closes it.
    """

    def apply_async(self, args=None, kwargs=None, *more, **options):
        held = _HELD.get()
        if held is not None:  # inside tasks_held: recorded, not sent
            held.append(HeldTask(name=self.name, args=tuple(args or ()), kwargs=dict(kwargs or {})))
            return None
        return super().apply_async(args, kwargs, *more, **options)

    def on_failure(self, exc, task_id, args, kwargs, einfo):
        if getattr(exc, "job_run_recorded", False):
            return
        try:
            job_task_failed(
                task=self.name, args=args or [], kwargs=kwargs or {}, error=exc, now=timezone.now()
            )
        except Exception:
            logger.warning("could not record the failure of task %s", self.name, exc_info=True)

    def on_success(self, retval, task_id, args, kwargs):
        now = timezone.now()
        try:
            JobRun.objects.filter(
                kind=self.name[:40], key=_task_key(args or [], now), status=JobRun.Status.FAILED
            ).update(
                status=JobRun.Status.DONE,
                message="done on a later attempt",
                finished_at=now,
                heartbeat_at=now,
            )
        except Exception:
            logger.warning("could not close the failed run of task %s", self.name, exc_info=True)


def last_credited_date(*, before: dt.date | None = None) -> dt.date | None:
    """The last Valuation Date (before `before`, if given) whose crediting job is done. It lives with the
    jobs so that the plan tables (market closures) can ask it without importing the books."""
    # One statement written out: the simulator and the payment services ask it every production day (some
    # 900 times in a three-year scenario), and the ORM's aggregate took most of its millisecond to compile.
    sql = f"SELECT max(key) FROM {JobRun._meta.db_table} WHERE kind = %s AND status = %s"
    params = ["crediting", JobRun.Status.DONE.value]
    if before is not None:
        sql += " AND key < %s"
        params.append(before.isoformat())
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        key = cursor.fetchone()[0]
    return dt.date.fromisoformat(key) if key else None
