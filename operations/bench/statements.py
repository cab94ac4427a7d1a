"""`manage.py bench statements --participants N [--json]`: a quarter's statements by two real Celery workers.

In a scratch database: N EDCP participants, each with a Retirement/Termination Account in two funds,
credited for Q1 2026 (an opening balance on December 31, 2025, a deferral on February 2, prices moving
every Valuation Date), written set-based as the crediting job leaves them (ledger entries, one
DailyValuation row per position and Valuation Date, the crediting JobRuns done). Timed: from queueing
the quarter's task to its JobRun ending, with `--workers` (2) worker processes (`celery worker --pool
solo`, so each process's peak resident memory, VmHWM, is the worker's). Every statement is tied to the
ledger and drawn to PDF exactly as in production. The set-up is not timed.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from urllib.parse import quote

from django.conf import settings
from django.db import connection
from django.utils import timezone

from core import valuation_calendar as cal
from core.models import JobRun
from operations.simulation.sandbox import scratch_database
from plans.models import Fund, Plan
from statements.models import Statement
from statements.tasks import quarterly_statements_task

OPENING = dt.date(2025, 12, 31)
DEFERRAL_ON = dt.date(2026, 2, 2)
QUARTER_END = dt.date(2026, 3, 31)


def add_arguments(parser) -> None:
    parser.add_argument("--workers", type=int, default=2, help="Celery worker processes (default 2)")
    parser.add_argument("--timeout", type=int, default=3600, help="give up after this many seconds")


def _setup(n: int) -> None:
    plan = (
        Plan.objects.filter(kind=Plan.Kind.ACCOUNT_BALANCE).order_by("code").first()
    )  # the first account plan
    assert plan is not None, "load the plan catalog first"
    funds = [
        Fund.objects.create(plan=plan, code="SV", name="Stable Value", is_default=True),
        Fund.objects.create(plan=plan, code="EQ", name="Equity Index"),
    ]
    days = cal.valuation_dates_between(OPENING, QUARTER_END)
    now = timezone.now()
    with connection.cursor() as c:
        for k, fund in enumerate(funds):
            # Prices that move every day: 10 + (day number mod 9) / 20 + day number / 100 (+ 5 for the second fund).
            c.execute(
                """INSERT INTO plans_fundprice (fund_id, date, price, loaded_at, source)
                   SELECT %s, d, round(10 + %s + (i %% 9) / 20.0 + i / 100.0, 6), %s, 'bench'
                   FROM unnest(%s::date[]) WITH ORDINALITY AS t(d, i)""",
                [fund.id, 5 * k, now, days],
            )
        c.execute(
            """INSERT INTO participants_person (employee_number, first_name, last_name, birth_date, hire_date,
                   marital_status, email, address_line1, address_line2, city, state, postal_code)
               SELECT 'S' || lpad(g::text, 7, '0'), 'Bench', 'P' || g, DATE '1965-01-01', DATE '2005-01-03',
                      'single', '', '1 Bench Way', '', 'Richmond', 'VA', '23230'
               FROM generate_series(1, %s) g""",
            [n],
        )
        c.execute(
            """INSERT INTO participants_participation (person_id, plan_id, entered_on, eligible)
               SELECT id, %s, DATE '2006-01-01', true FROM participants_person""",
            [plan.id],
        )
        c.execute("""INSERT INTO books_account (participation_id, kind, opened_on)
                     SELECT id, 'retirement_termination', DATE '2006-01-01' FROM participants_participation""")
        c.execute(
            "INSERT INTO books_position (account_id, fund_id) SELECT a.id, f FROM books_account a, unnest(%s::int[]) f",
            [[f.id for f in funds]],
        )
        # Units: 500 to 9,999 at the opening, plus 10 to 109 bought by the deferral of February 2.
        c.execute(
            """CREATE TEMP TABLE bench_units AS
               SELECT p.id AS position_id, p.account_id, p.fund_id, (500 + p.id % 9500)::numeric AS u0,
                      (10 + p.id % 100)::numeric AS du
               FROM books_position p"""
        )
        c.execute(
            """INSERT INTO books_ledgerentry (position_id, account_id, kind, source, effective_date, valuation_date,
                   units, price, amount, idempotency_key, actor, posted_at, memo)
               SELECT b.position_id, b.account_id, 'credit', 'deferral', pr.date, pr.date,
                      CASE WHEN pr.date = %(opening)s THEN b.u0 ELSE b.du END, pr.price,
                      round((CASE WHEN pr.date = %(opening)s THEN b.u0 ELSE b.du END) * pr.price, 2),
                      'bench-' || pr.date || '-' || b.position_id, 'bench', %(now)s, 'bench'
               FROM bench_units b JOIN plans_fundprice pr ON pr.fund_id = b.fund_id
               WHERE pr.date IN (%(opening)s, %(deferral)s)""",
            {"opening": OPENING, "deferral": DEFERRAL_ON, "now": now},
        )
        # One row per position and Valuation Date, as the crediting job writes them: value = round(units x price, 2),
        # flow = the day's entries, earnings = value - previous value - flow.
        c.execute(
            """INSERT INTO books_dailyvaluation (position_id, account_id, fund_id, valuation_date, units, price,
                   value, flow, earnings)
               SELECT position_id, account_id, fund_id, date, units, price, value, flow,
                      value - coalesce(lag(value) OVER (PARTITION BY position_id ORDER BY date), 0) - flow
               FROM (
                 SELECT b.position_id, b.account_id, b.fund_id, pr.date,
                        b.u0 + CASE WHEN pr.date >= %(deferral)s THEN b.du ELSE 0 END AS units, pr.price,
                        round((b.u0 + CASE WHEN pr.date >= %(deferral)s THEN b.du ELSE 0 END) * pr.price, 2) AS value,
                        CASE WHEN pr.date = %(opening)s THEN round(b.u0 * pr.price, 2)
                             WHEN pr.date = %(deferral)s THEN round(b.du * pr.price, 2) ELSE 0 END AS flow
                 FROM bench_units b JOIN plans_fundprice pr ON pr.fund_id = b.fund_id
               ) v""",
            {"opening": OPENING, "deferral": DEFERRAL_ON},
        )
        c.execute(
            """INSERT INTO core_jobrun (kind, key, status, progress_done, progress_total, message, attempts, worker,
                   started_at, heartbeat_at, finished_at, stats)
               SELECT 'crediting', d::text, 'done', 1, 1, 'bench', 1, 'bench', %s, %s, %s, '{}'
               FROM unnest(%s::date[]) AS d""",
            [now, now, now, days],
        )
        c.execute("DROP TABLE bench_units")
        c.execute("ANALYZE")


def _database_url() -> str:
    s = connection.settings_dict
    auth = quote(s["USER"] or "", safe="")
    if s.get("PASSWORD"):
        auth += ":" + quote(s["PASSWORD"], safe="")
    return f"postgres://{auth}@{s['HOST'] or '127.0.0.1'}:{s['PORT'] or 5432}/{s['NAME']}"


def _peak_mb(pid: int) -> float:
    with contextlib.suppress(OSError):
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return round(int(line.split()[1]) / 1024, 1)
    return 0.0


def _start_workers(count: int, queue: str, media: str, log_dir: str) -> list[subprocess.Popen]:
    env = {**os.environ, "DATABASE_URL": _database_url(), "MEDIA_ROOT": media, "PYTHONUNBUFFERED": "1"}
    workers = []
    for i in range(count):
        log = Path(log_dir) / f"worker{i}.log"
        with log.open("ab") as out:
            workers.append(
                subprocess.Popen(
                    [
                        sys.executable,
                        "-m",
                        "celery",
                        "-A",
                        "config",
                        "worker",
                        "--queues",
                        queue,
                        "--pool",
                        "solo",
                        "--hostname",
                        f"{queue}-{i}@%h",
                        "--without-gossip",
                        "--without-mingle",
                        "--without-heartbeat",
                        "--loglevel",
                        "WARNING",
                    ],
                    cwd=settings.BASE_DIR,
                    env=env,
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                )
            )
    return workers


def _stop(workers: list[subprocess.Popen]) -> None:
    for w in workers:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(w.pid, signal.SIGTERM)
    for w in workers:
        try:
            w.wait(timeout=20)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(w.pid, signal.SIGKILL)
            w.wait(timeout=10)


def run(*, participants: int = 10000, json: bool = False, workers: int = 2, timeout: int = 3600, **_) -> dict:
    queue = f"bench-statements-{uuid.uuid4().hex[:8]}"
    with scratch_database(), tempfile.TemporaryDirectory() as media, tempfile.TemporaryDirectory() as logs:
        started = time.monotonic()
        _setup(participants)
        setup_seconds = time.monotonic() - started
        procs = _start_workers(workers, queue, media, logs)
        try:
            time.sleep(3)  # the workers connect to the broker
            t0 = time.monotonic()
            quarterly_statements_task.apply_async(args=[QUARTER_END.isoformat()], queue=queue)
            run_ = None
            while time.monotonic() - t0 < timeout:
                run_ = JobRun.objects.filter(kind="statements", key=QUARTER_END.isoformat()).first()
                if run_ is not None and run_.status != JobRun.Status.RUNNING:
                    break
                if any(p.poll() is not None for p in procs):
                    raise RuntimeError(
                        "a worker exited: "
                        + " ".join(p.read_text()[-2000:] for p in Path(logs).glob("*.log"))
                    )
                time.sleep(1)
            seconds = time.monotonic() - t0
            peaks = [_peak_mb(p.pid) for p in procs]
        finally:
            _stop(procs)
        made = Statement.objects.count()
        documents_mb = round(sum(f.stat().st_size for f in Path(media).rglob("*.pdf")) / 1e6, 1)
    return {
        "statements": made,
        "seconds": round(seconds, 2),
        "per_statement_ms": round(1000 * seconds / made, 2) if made else None,
        "peak_memory_mb": max(peaks),
        "workers": workers,
        "worker_peak_memory_mb": peaks,
        "job_status": run_.status if run_ else "not started",
        "job_message": run_.message[:300] if run_ else "",
        "participants": participants,
        "documents_mb": documents_mb,
        "setup_seconds": round(setup_seconds, 2),
        "note": "two cores shared with other engineers' processes: figures vary with their load",
    }
