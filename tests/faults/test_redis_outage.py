"""Redis down while Celery beat and a worker run (the private redis-server of this test, append-only file on as in
docker-compose.yml): a task queued before the outage is not lost, the schedule that fell due during the outage
runs once when Redis returns (core.beat keeps sending it until the broker answers), and the job that was
running meanwhile finishes once. verify_books finds nothing.

Redis stays down for a full minute (OUTAGE_SECONDS): the schedule falls due while it is down and a task waits in
the queue across it, which the test checks happened; beat keeps trying the send through the whole minute, and the
worker reconnects when Redis returns.
"""

from __future__ import annotations

import datetime as dt
import os
import re
import subprocess
import sys
import time
import uuid

import pytest
from celery import Celery
from django.conf import settings
from django.db import connection
from django.utils import timezone
from django_celery_beat.models import ClockedSchedule, PeriodicTask

from books.models import LedgerEntry, PendingTransaction
from books.services.verify import books_verify
from core.models import JobRun
from operations.bench.crediting import DAY, generate
from tests.faults.conftest import verify_books_command
from tests.faults.test_postgres_restart import _waiting_on_lock, row_held
from tests.servers import private_redis
from tests.workers import celery_worker, database_url_for_workers, unique_queue, wait_for

pytestmark = [pytest.mark.slow, pytest.mark.worker]

OUTAGE_SECONDS = 60


def _succeeded(log: str, task: str) -> list[str]:
    """The ids of the runs of `task` the worker finished."""
    return re.findall(rf"Task {re.escape(task)}\[([^\]]+)\] succeeded", log)


def _send_retries(log: str) -> list[dt.datetime]:
    """When beat tried again to reach Redis for the due send (its reconnect loop, or core.beat's next try)."""
    return [
        dt.datetime.fromisoformat(stamp)
        for stamp in re.findall(
            r"\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d),\d+: \w+/MainProcess\] beat: "
            r"(?:Connection error|could not send fault test: due during the outage)",
            log,
        )
    ]


def test_redis_down_while_beat_and_a_worker_run_loses_no_task_and_runs_the_missed_schedule_once(
    fault_books, tmp_path
):
    built = generate(participants=20, paid=1.0)
    key = DAY.isoformat()
    first_pending = (
        PendingTransaction.objects.filter(status="pending").order_by("id").values_list("id", flat=True)[0]
    )
    queue = unique_queue("fault-redis")
    with private_redis(tmp_path) as redis:
        env = {"REDIS_URL": redis.url(0), "CELERY_VISIBILITY_TIMEOUT": "10"}
        sender = Celery(
            "fault-test", broker=redis.url(0), set_as_current=False
        )  # this process sends through the private Redis too
        beat_log = tmp_path / "beat.log"
        with celery_worker(queue=queue, log=tmp_path / "worker.log", env=env) as worker:
            beat = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "celery",
                    "-A",
                    "config",
                    "beat",
                    "--loglevel",
                    "INFO",
                    "--max-interval",
                    "1",
                ],
                cwd=settings.BASE_DIR,
                env={
                    **os.environ,
                    "DATABASE_URL": database_url_for_workers(),
                    "TESTING": "true",
                    "PYTHONUNBUFFERED": "1",
                    **env,
                },
                stdout=beat_log.open("ab"),
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
            try:
                # Beat sends a first task (to a queue nobody reads) so it holds a broker connection when Redis
                # goes down, as it does in production after its first send.
                PeriodicTask.objects.create(
                    name="fault test: warm-up",
                    task="claims.flag_deadlines",
                    clocked=ClockedSchedule.objects.create(clocked_time=timezone.now()),
                    one_off=True,
                    queue=f"{queue}-nobody",
                )
                connection.close()
                wait_for(
                    lambda: "fault test: warm-up" in beat_log.read_text(errors="replace"),
                    timeout=30,
                    what="beat's first send",
                )
                with row_held(
                    fault_books.url,
                    "SELECT id FROM books_pendingtransaction WHERE id = %s FOR UPDATE",
                    [first_pending],
                ):
                    # The worker (one process) is busy crediting the day: what is sent next waits in Redis.
                    sender.send_task("books.credit_valuation_date", args=[key], queue=queue)
                    wait_for(
                        lambda: _waiting_on_lock("WITH todo AS"),
                        timeout=30,
                        worker=worker,
                        what="the worker to be busy crediting",
                    )
                    queued_id = f"queued-before-the-outage-{uuid.uuid4().hex[:6]}"
                    sender.send_task("claims.flag_deadlines", queue=queue, task_id=queued_id)
                    due_at = timezone.now() + dt.timedelta(seconds=4)
                    PeriodicTask.objects.create(
                        name="fault test: due during the outage",
                        task="claims.flag_deadlines",
                        clocked=ClockedSchedule.objects.create(clocked_time=due_at),
                        one_off=True,
                        queue=queue,
                    )
                    connection.close()
                    time.sleep(1.5)  # beat reads the new schedule
                    redis.stop()
                    stopped_at = timezone.now()
                    assert stopped_at < due_at, "Redis went down after the schedule fell due: start sooner"
                    time.sleep(OUTAGE_SECONDS)
                    log = beat_log.read_text(errors="replace")
                    assert "fault test: due during the outage" in log, log[
                        -3000:
                    ]  # beat tried during the outage
                    tries = _send_retries(log)
                    assert len(tries) >= 3 and (tries[-1] - tries[0]).total_seconds() >= OUTAGE_SECONDS / 2, (
                        log[-3000:]
                    )  # and kept trying through the minute
                    redis.start()
                # The crediting ends; the task queued before the outage and the schedule missed during it run.
                wait_for(
                    lambda: len(_succeeded(worker.output(), "claims.flag_deadlines")) >= 2,
                    timeout=90,
                    interval=0.5,
                    worker=worker,
                    what="the queued task and the missed schedule to run; beat's log:\n"
                    + beat_log.read_text(errors="replace")[-4000:],
                )
                assert JobRun.objects.get(kind="crediting", key=key).status == "done"
                connection.close()
                time.sleep(
                    15
                )  # longer than the visibility timeout: anything unacknowledged comes back by now
                assert beat.poll() is None, beat_log.read_text(errors="replace")[-3000:]
            finally:
                beat.terminate()
                beat.wait(timeout=20)
                sender.close()
            log = worker.output()
        runs = _succeeded(log, "claims.flag_deadlines")
        assert len(runs) == 2 and queued_id in runs, log[-4000:]  # not lost, and the schedule ran once

    run = JobRun.objects.get(kind="crediting", key=key)
    assert run.status == "done" and run.attempts == 1  # a redelivered copy found the date done
    entries = LedgerEntry.objects.filter(valuation_date=DAY)
    assert entries.count() == built["pending_credits"] == entries.values("pending_id").distinct().count()
    assert books_verify() == []
    verified = verify_books_command(fault_books)
    assert verified.returncode == 0, verified.stdout + verified.stderr
