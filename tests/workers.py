"""Real Celery worker processes for the crash tests: start one on the test database, kill it, stop it.

    with celery_worker(queue="test-x", log=tmp_path / "w.log") as worker:
        some_task.apply_async(args=[...], queue=worker.queue)
        ...
        worker.kill()          # SIGKILL to the whole process group (the main process and its pool child)

The worker runs `celery -A config worker` with the settings of the tests (DATABASE_URL pointing at the
test database, which the test must commit to: use `transactional_db`), REDIS_URL as the broker, one
pool process, and only the queue given, so tests never pick each other's tasks.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

from django.conf import settings
from django.db import connection

READY_MARK = "ready."


def database_url_for_workers() -> str:
    """The URL of the database this test process uses (pytest-django's test_<name>)."""
    s = connection.settings_dict
    auth = quote(s["USER"] or "", safe="")
    if s.get("PASSWORD"):
        auth += ":" + quote(s["PASSWORD"], safe="")
    return f"postgres://{auth}@{s['HOST'] or '127.0.0.1'}:{s['PORT'] or 5432}/{s['NAME']}"


def unique_queue(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


@dataclass
class Worker:
    queue: str
    process: subprocess.Popen
    log: Path

    def output(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""

    def alive(self) -> bool:
        return self.process.poll() is None

    def kill(self) -> None:
        """SIGKILL the worker and its pool processes at once: nothing gets to ack, reject or clean up."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(timeout=10)

    def stop(self, timeout: float = 10) -> None:
        if not self.alive():
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()


def start_worker(
    *, queue: str, log: Path, env: dict[str, str] | None = None, ready_timeout: float = 30
) -> Worker:
    environment = {
        **os.environ,
        "DATABASE_URL": database_url_for_workers(),
        "TESTING": "true",
        "PYTHONUNBUFFERED": "1",
        **(env or {}),
    }
    environment.pop("TEST_DATABASE_NAME", None)
    out = log.open("ab")
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "config",
            "worker",
            "--queues",
            queue,
            "--concurrency",
            "1",
            "--pool",
            "prefork",
            "--hostname",
            f"{queue}@%h",
            "--without-gossip",
            "--without-mingle",
            "--without-heartbeat",
            "--loglevel",
            "INFO",
        ],
        cwd=settings.BASE_DIR,
        env=environment,
        stdout=out,
        stderr=subprocess.STDOUT,
        start_new_session=True,  # its own process group, so kill() reaches the pool child too
    )
    out.close()
    worker = Worker(queue=queue, process=process, log=log)
    deadline = time.monotonic() + ready_timeout
    while READY_MARK not in worker.output():
        if not worker.alive():
            raise RuntimeError(f"the celery worker exited with {process.returncode}:\n{worker.output()}")
        if time.monotonic() > deadline:
            worker.kill()
            raise RuntimeError(f"the celery worker was not ready in {ready_timeout}s:\n{worker.output()}")
        time.sleep(0.1)
    return worker


@contextlib.contextmanager
def celery_worker(*, queue: str, log: Path, env: dict[str, str] | None = None) -> Iterator[Worker]:
    worker = start_worker(queue=queue, log=log, env=env)
    try:
        yield worker
    finally:
        worker.stop()


def wait_for(
    condition: Callable[[], object],
    *,
    timeout: float,
    what: str,
    interval: float = 0.05,
    worker: Worker | None = None,
):
    """Poll until condition() is truthy; fail naming `what` (and showing the worker's log)."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            log = f"\n--- worker log ---\n{worker.output()[-4000:]}" if worker else ""
            raise AssertionError(f"timed out after {timeout}s waiting for {what}{log}")
        time.sleep(interval)


def purge_queue(queue: str) -> None:
    """Drop what a test left in the broker: its queue, the queue's bindings, its unacked messages."""
    from config.celery import app

    with app.connection_for_write() as conn:
        with contextlib.suppress(Exception):
            conn.default_channel.queue_purge(queue)
        client = getattr(conn.default_channel, "client", None)
        if client is not None:
            client.delete(queue, f"_kombu.binding.{queue}", f"_kombu.binding_permanent.{queue}")
            for tag, payload in (client.hgetall("unacked") or {}).items():
                if queue.encode() in payload:
                    client.hdel("unacked", tag)
                    client.zrem("unacked_index", tag)
