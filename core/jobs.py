"""Claiming batch work: a unique JobRun row per (kind, key) and a lock so two workers never overlap.

PostgreSQL: a session-level advisory lock, released by the server if the worker dies, so a killed
worker never blocks the retry. SQLite (the embedded demo) serialises writers by itself.
`job_locked_claim` takes the lock, claims and runs the caller's read in one round trip, and
`LockedRun.finish` records the end and releases the lock in one (a daily job runs thousands of
times in a simulation); `job_lock` + `job_claim` + `job_finish` do the same in more.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import hashlib
import json
import os
import socket
from collections.abc import Iterator
from dataclasses import dataclass

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
    return JobRun(
        id=row[0],
        kind=kind,
        key=key,
        status=JobRun.Status.RUNNING,
        attempts=row[1],
        started_at=now,
        heartbeat_at=now,
    )


_LOCKED_CLAIM_SQL = """
WITH lock AS (SELECT pg_try_advisory_lock(%(job_lock)s) AS got),
claim AS (
    INSERT INTO core_jobrun (kind, key, status, progress_done, progress_total, message, attempts, worker,
                             started_at, heartbeat_at, stats)
    SELECT %(job_kind)s, %(job_key)s, 'running', 3, 4, 'valuation', 1, %(job_worker)s, %(job_now)s, %(job_now)s, '{{}}'
    FROM lock WHERE got
    ON CONFLICT (kind, key) DO UPDATE SET status = 'running', attempts = core_jobrun.attempts + 1,
        worker = excluded.worker, heartbeat_at = excluded.heartbeat_at, message = ''
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
    finally:
        if claimed.locked:
            _unlock(lock_id)


def _unlock(lock_id: int) -> None:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_unlock(%s)", [lock_id])


def job_progress(run: JobRun, *, done: int, total: int, message: str = "") -> None:
    run.progress_done, run.progress_total, run.message = done, total, message or run.message
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
    params = [
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
