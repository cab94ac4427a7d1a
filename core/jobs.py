"""Claiming batch work: a unique JobRun row per (kind, key) and a lock so two workers never overlap.

PostgreSQL: a session-level advisory lock, released by the server if the worker dies, so a killed
worker never blocks the retry. SQLite (the embedded demo) serialises writers by itself.
`job_locked_claim` takes the lock and claims in one round trip (a daily job runs thousands of
times in a simulation); `job_lock` + `job_claim` do the same in two.
"""
from __future__ import annotations

import contextlib
import datetime as dt
import hashlib
import json
import os
import socket
from collections.abc import Iterator

from django.db import connection
from django.utils import timezone

from core.models import JobRun


class JobBusy(RuntimeError):
    """Another worker holds the lock for this job."""


def _lock_id(name: str) -> int:
    return int.from_bytes(hashlib.sha256(name.encode()).digest()[:8], "big", signed=True)


@contextlib.contextmanager
def job_lock(name: str) -> Iterator[None]:
    if connection.vendor != "postgresql":
        yield
        return
    lock_id = _lock_id(name)
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_try_advisory_lock(%s)", [lock_id])
        if not cursor.fetchone()[0]:
            raise JobBusy(f"{name} is running in another worker")
    try:
        yield
    finally:
        _unlock(lock_id)


def worker_name() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


_CLAIM_SQL = """
INSERT INTO core_jobrun (kind, key, status, progress_done, progress_total, message, attempts, worker,
                         started_at, heartbeat_at, stats)
VALUES (%s, %s, 'running', 3, 4, 'valuation', 1, %s, %s, %s, '{}')
ON CONFLICT (kind, key) DO UPDATE SET status = 'running', attempts = core_jobrun.attempts + 1,
    worker = excluded.worker, heartbeat_at = excluded.heartbeat_at, message = ''
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
    return JobRun(id=row[0], kind=kind, key=key, status=JobRun.Status.RUNNING, attempts=row[1], started_at=now,
                  heartbeat_at=now)


_LOCKED_CLAIM_SQL = """
WITH lock AS (SELECT pg_try_advisory_lock(%(lock)s) AS got),
claim AS (
    INSERT INTO core_jobrun (kind, key, status, progress_done, progress_total, message, attempts, worker,
                             started_at, heartbeat_at, stats)
    SELECT %(kind)s, %(key)s, 'running', 3, 4, 'valuation', 1, %(worker)s, %(now)s, %(now)s, '{}' FROM lock WHERE got
    ON CONFLICT (kind, key) DO UPDATE SET status = 'running', attempts = core_jobrun.attempts + 1,
        worker = excluded.worker, heartbeat_at = excluded.heartbeat_at, message = ''
    WHERE core_jobrun.status <> 'done'
    RETURNING id, attempts
)
SELECT lock.got, claim.id, claim.attempts FROM lock LEFT JOIN claim ON true
"""


@contextlib.contextmanager
def job_locked_claim(*, lock: str, kind: str, key: str, now: dt.datetime | None = None) -> Iterator[JobRun]:
    """`with job_lock(lock): run = job_claim(kind=kind, key=key)` in one statement; the lock is released on exit.

    The claim reads the latest committed JobRun row (ON CONFLICT sees past the statement's snapshot),
    so a run another worker finished just before we got the lock is seen as done.
    """
    if connection.vendor != "postgresql":
        with job_lock(lock):
            yield job_claim(kind=kind, key=key, now=now)
        return
    now = now or timezone.now()
    lock_id = _lock_id(lock)
    try:
        with connection.cursor() as cursor:
            cursor.execute(_LOCKED_CLAIM_SQL, {"lock": lock_id, "kind": kind, "key": key, "worker": worker_name(),
                                               "now": now})
            got, run_id, attempts = cursor.fetchone()
    except BaseException:
        with contextlib.suppress(Exception):  # the lock is not transactional: it may be held though the claim failed
            _unlock(lock_id)
        raise
    if not got:
        raise JobBusy(f"{lock} is running in another worker")
    try:
        if run_id is None:
            yield JobRun.objects.get(kind=kind, key=key)
        else:
            yield JobRun(id=run_id, kind=kind, key=key, status=JobRun.Status.RUNNING, attempts=attempts,
                         started_at=now, heartbeat_at=now)
    finally:
        _unlock(lock_id)


def _unlock(lock_id: int) -> None:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_unlock(%s)", [lock_id])


def job_progress(run: JobRun, *, done: int, total: int, message: str = "") -> None:
    run.progress_done, run.progress_total, run.message = done, total, message or run.message
    with connection.cursor() as cursor:
        cursor.execute("UPDATE core_jobrun SET progress_done = %s, progress_total = %s, message = %s, heartbeat_at = %s "
                       "WHERE id = %s", [done, total, run.message, timezone.now(), run.id])


def job_finish(run: JobRun, *, status: str, message: str = "", stats: dict | None = None) -> JobRun:
    now = timezone.now()
    run.status, run.message, run.finished_at, run.heartbeat_at = status, message, now, now
    if stats is not None:
        run.stats = stats
    if status == JobRun.Status.DONE:
        run.progress_done = run.progress_total = max(run.progress_total, 1)
    with connection.cursor() as cursor:
        cursor.execute("UPDATE core_jobrun SET status = %s, message = %s, finished_at = %s, heartbeat_at = %s, "
                       "stats = %s, progress_done = %s, progress_total = %s WHERE id = %s",
                       [status, message, now, now, json.dumps(run.stats or {}), run.progress_done, run.progress_total,
                        run.id])
    return run
