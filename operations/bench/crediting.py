"""Crediting one Valuation Date for N synthetic participants, against a hand-written INSERT ... SELECT.

`python manage.py bench crediting --participants N [--paid F] [--repeat R] [--json]`, in a scratch database
(with --repeat, R times, each on new books in a new scratch database: the figures are the runs' medians, `runs`
lists each):

1. Generation (set-based, generate_series): N participants in the first plan with three
   single accounts (RRP), each account holding four funds (12 positions a participant), bought on
   the previous Valuation Date PREV: one ledger credit and one DailyValuation row per position, the
   PREV crediting run done, prices of PREV and DAY loaded. By default DAY has no payroll (every
   position revalued at the day's prices); with --paid F a share F of the participants has two
   pending credits for DAY (a deferral and a match, bought in the default fund; --paid 1 is a
   payday for everyone). VACUUM ANALYZE, then a read of PREV's rows so both timings start warm.
2. Reference, timed: one statement, `_REFERENCE_SQL` below, writing one row per position for DAY
   (PREV's units at DAY's price) into `bench_reference`, a table created
   `LIKE books_dailyvaluation INCLUDING ALL` (same columns, identity, indexes) and loaded beforehand
   with PREV's rows, so its indexes are the size the real table's are.
3. The job, timed: books.tasks.credit_valuation_date_task(DAY) called in this process on a fresh
   PostgreSQL connection: lock + claim + checks, the credits when any are due, the valuation of
   every position, finish + unlock (the exchange calendar is loaded beforehand, as in a worker).
4. The same task again: the rows it adds (DailyValuation + ledger entries + positions) must be 0.

Backend CPU: the user + system time of the PostgreSQL backend that ran the reference, and of the one
that ran the job (when the server runs on this machine): on a loaded machine the steadier comparison.
`backend_cpu_by_statement` splits the job's figure by statement: the credits (`_CREDITS_SQL`), the
valuation (`_VALUATION_SQL`, or its resuming form) and everything else (claim, checks, progress, finish).

Peak memory: this process's peak RSS (getrusage) plus, when PostgreSQL runs on this machine, the
peak RSS (VmHWM) of the backend that ran the job (its shared-buffer pages included).

The hot statements measured are books/services/crediting.py `_CREDITS_SQL` and `_VALUATION_SQL`.
"""

from __future__ import annotations

import datetime as dt
import os
import resource
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from django.db import connection
from django.utils import timezone

from books.models import Source
from books.services import crediting
from books.tasks import credit_valuation_date_task
from core import valuation_calendar as cal
from core.models import JobRun
from operations.simulation.sandbox import scratch_database
from plans.models import Fund, FundPrice, Plan

PREV, DAY = dt.date(2026, 1, 15), dt.date(2026, 1, 16)  # consecutive Valuation Dates
FUNDS = (
    ("STABLE", "Stable Value", True, "10.000000", "10.001000"),
    ("BOND", "Bond Index", False, "21.370000", "21.290000"),
    ("EQUITY", "Equity Index", False, "48.910000", "49.620000"),
    ("INTL", "International Equity", False, "17.330000", "17.180000"),
)

_COLUMNS = "position_id, account_id, fund_id, valuation_date, units, price, value, flow, earnings"

# The reference: the least any crediting can do, one row per position at DAY's price.
_REFERENCE_SQL = """
INSERT INTO bench_reference (position_id, account_id, fund_id, valuation_date, units, price, value, flow, earnings)
SELECT v.position_id, v.account_id, v.fund_id, %(day)s, v.units, pr.price,
       ROUND(v.units * pr.price, 2), 0, ROUND(v.units * pr.price, 2) - v.value
FROM books_dailyvaluation v JOIN plans_fundprice pr ON pr.fund_id = v.fund_id AND pr.date = %(day)s
WHERE v.valuation_date = %(prev)s
"""

_GENERATE_SQL = [
    """INSERT INTO participants_person (employee_number, first_name, last_name, birth_date, hire_date, marital_status,
                                        email, address_line1, address_line2, city, state, postal_code)
       SELECT 'B' || lpad(g::text, 8, '0'), 'Bench', 'Participant ' || g, DATE '1960-01-01' + g %% 9000,
              DATE '1990-01-01' + g %% 9000, 'single', '', '', '', '', '', ''
       FROM generate_series(1, %(n)s) g""",
    """INSERT INTO participants_participation (person_id, plan_id, entered_on, eligible)
       SELECT id, %(plan)s, %(entered)s, true FROM participants_person ORDER BY id""",
    """INSERT INTO books_account (participation_id, kind, opened_on)
       SELECT pa.id, k.kind, %(entered)s FROM participants_participation pa
       CROSS JOIN unnest(%(kinds)s::text[]) WITH ORDINALITY k(kind, n) ORDER BY pa.id, k.n""",
    """INSERT INTO books_position (account_id, fund_id)
       SELECT a.id, f.id FROM books_account a CROSS JOIN unnest(%(funds)s::bigint[]) f(id) ORDER BY a.id, f.id""",
    # the opening balance: units bought on PREV (between 1 and 1,000, six decimals)
    """INSERT INTO books_ledgerentry (position_id, account_id, kind, source, effective_date, valuation_date, units,
                                      price, amount, idempotency_key, actor, posted_at, memo)
       SELECT p.id, p.account_id, 'credit', 'deferral', %(prev)s, %(prev)s, u.units, pr.price,
              ROUND(u.units * pr.price, 2), 'bench:open:' || p.id, 'bench', %(now)s, ''
       FROM books_position p
       JOIN plans_fundprice pr ON pr.fund_id = p.fund_id AND pr.date = %(prev)s
       CROSS JOIN LATERAL (SELECT ROUND(1 + (p.id * 7919 %% 999000000) / 1000000.0, 6) AS units) u
       ORDER BY p.id""",
    """INSERT INTO books_dailyvaluation (position_id, account_id, fund_id, valuation_date, units, price, value, flow,
                                         earnings)
       SELECT e.position_id, e.account_id, p.fund_id, %(prev)s, e.units, e.price, e.amount, e.amount, 0
       FROM books_ledgerentry e JOIN books_position p ON p.id = e.position_id
       WHERE e.valuation_date = %(prev)s ORDER BY e.position_id""",
    # payday: a deferral into the first account and a match into the second, for a share of participants
    """INSERT INTO books_pendingtransaction (account_id, kind, source, amount, liquidate_all, effective_date, status,
                                             idempotency_key, actor, created_at, memo, cite)
       SELECT a.id, 'credit', s.source, 100 + (a.participation_id %% 400) + 0.37, false, %(day)s, 'pending',
              'bench:pay:' || a.id, 'bench', %(now)s, 'payroll', ''
       FROM books_account a
       JOIN (VALUES (%(first)s, %(deferral)s), (%(second)s, %(matching)s)) s(kind, source) ON s.kind = a.kind
       WHERE (a.participation_id - (SELECT min(id) FROM participants_participation)) %% 1000 < %(paid_per_mille)s
       ORDER BY a.id""",
]


def add_arguments(parser) -> None:
    parser.add_argument(
        "--paid",
        type=float,
        default=0.0,
        help="share of participants with two payroll credits pending for the day (1: a payday)",
    )
    parser.add_argument(
        "--repeat",
        type=int,
        default=1,
        help="runs, each on newly generated books with its own reference: the figures are then their medians",
    )


def _say(quiet: bool, text: str) -> None:
    if not quiet:
        print(text, file=sys.stderr, flush=True)


def _execute(sql: str, params: dict | list | None = None) -> int:
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.rowcount


def _scalar(sql: str, params: dict | list | None = None):
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchone()[0]


def _fresh_connection() -> None:
    """A new PostgreSQL backend: its peak memory is then that of what runs next."""
    connection.close()
    connection.ensure_connection()


def _backend_peak_mb() -> float | None:
    """VmHWM of this connection's backend process, when the server runs on this machine."""
    pid = _scalar("SELECT pg_backend_pid()")
    status = Path(f"/proc/{pid}/status")
    try:
        if b"postgres" not in Path(f"/proc/{pid}/cmdline").read_bytes():
            return None
        for line in status.read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


def _backend_cpu_seconds() -> float | None:
    """CPU time (user + system) this connection's backend has used, when the server runs on this machine.

    On a loaded machine wall time mostly measures the wait for a core; the CPU time of the one backend
    that ran a statement is the steadier figure to compare the job with the reference.
    """
    return _postgres_cpu_seconds(_scalar("SELECT pg_backend_pid()"))


def _postgres_cpu_seconds(pid: int) -> float | None:
    """CPU time (user + system) of PostgreSQL process `pid`, or None when it is not a process of this machine."""
    try:
        if b"postgres" not in Path(f"/proc/{pid}/cmdline").read_bytes():
            return None
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _cpu_used(before: float | None) -> float | None:
    after = _backend_cpu_seconds()
    return round(after - before, 2) if before is not None and after is not None else None


def _statement_label(sql: str) -> str:
    if sql == crediting._CREDITS_SQL:
        return "credits"
    if sql in (crediting._VALUATION_SQL, crediting._VALUATION_RESUME_SQL):
        return "valuation"
    return "other"


class _CpuByStatement:
    """A connection execute wrapper adding up the backend CPU time of each statement the job runs."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {"credits": 0.0, "valuation": 0.0, "other": 0.0}
        self.statements: dict[str, int] = {"credits": 0, "valuation": 0, "other": 0}
        self.pid = _scalar("SELECT pg_backend_pid()")
        self.measured = _postgres_cpu_seconds(self.pid) is not None

    def __call__(self, execute, sql, params, many, context):
        label = _statement_label(sql)
        self.statements[label] += 1
        before = _postgres_cpu_seconds(self.pid) if self.measured else None
        try:
            return execute(sql, params, many, context)
        finally:
            after = _postgres_cpu_seconds(self.pid) if before is not None else None
            if before is not None and after is not None:
                self.seconds[label] += after - before

    def figures(self) -> dict[str, float] | None:
        return {k: round(v, 2) for k, v in self.seconds.items()} if self.measured else None


def _rows_written() -> int:
    return _scalar(
        "SELECT (SELECT count(*) FROM books_dailyvaluation) + (SELECT count(*) FROM books_ledgerentry)"
        " + (SELECT count(*) FROM books_position)"
    )


def _bench_plan() -> tuple[Plan, list[str]]:
    """The first plan whose accounts include three of which a participant has one each (RRP)."""
    for plan in Plan.objects.order_by("code"):
        version = plan.version_on(DAY)
        kinds = [k["kind"] for k in version.account_kinds() if k.get("max_count") == 1]
        if len(kinds) >= 3:
            return plan, kinds[:3]
    raise RuntimeError("no plan in the catalog has three single accounts")


def generate(*, participants: int, paid: float = 0.0) -> dict:
    """Build the synthetic plan in the current (scratch) database; returns what was built."""
    plan, kinds = _bench_plan()
    now = timezone.now()
    funds = []
    for code, name, is_default, prev_price, price in FUNDS:
        fund = Fund.objects.create(plan=plan, code=code, name=name, is_default=is_default)
        FundPrice.objects.create(fund=fund, date=PREV, price=prev_price, loaded_at=now, source="bench")
        FundPrice.objects.create(fund=fund, date=DAY, price=price, loaded_at=now, source="bench")
        funds.append(fund.id)
    params: dict[str, Any] = {
        "n": participants,
        "plan": plan.id,
        "entered": dt.date(2011, 6, 30),
        "kinds": kinds,
        "funds": funds,
        "prev": PREV,
        "day": DAY,
        "now": now,
        "first": kinds[0],
        "second": kinds[1],
        "deferral": Source.DEFERRAL.value,
        "matching": Source.MATCHING.value,
        "paid_per_mille": round(paid * 1000),
    }
    with connection.cursor() as cursor:
        # The rows are consistent by construction: skip the per-row foreign-key triggers while loading.
        try:
            cursor.execute("SET session_replication_role = replica")
        except Exception:  # not a superuser: the triggers run, the load is only slower
            pass
        for sql in _GENERATE_SQL:
            cursor.execute(sql, params)
        cursor.execute("SET session_replication_role = DEFAULT")
    JobRun.objects.create(
        kind="crediting",
        key=PREV.isoformat(),
        status=JobRun.Status.DONE,
        started_at=now,
        heartbeat_at=now,
        finished_at=now,
        message="credited (bench)",
        progress_done=4,
        progress_total=4,
    )
    _execute("VACUUM ANALYZE")
    return {
        "participants": participants,
        "positions": _scalar("SELECT count(*) FROM books_position"),
        "pending_credits": _scalar("SELECT count(*) FROM books_pendingtransaction"),
    }


def measure(*, quiet: bool = True) -> dict:
    """Time the reference statement, then the real task, then the task again, on the generated data."""
    cal.is_valuation_date(DAY)  # a worker loads the exchange calendar once, not per date
    params = {"day": DAY, "prev": PREV}
    positions = _scalar("SELECT count(*) FROM books_position")

    _execute("DROP TABLE IF EXISTS bench_reference")
    _execute("CREATE TABLE bench_reference (LIKE books_dailyvaluation INCLUDING ALL)")
    _execute(
        f"INSERT INTO bench_reference ({_COLUMNS}) SELECT {_COLUMNS} FROM books_dailyvaluation "
        "WHERE valuation_date = %(prev)s ORDER BY position_id",
        params,
    )
    _execute("VACUUM ANALYZE bench_reference")
    _scalar(
        "SELECT sum(units + value) FROM books_dailyvaluation WHERE valuation_date = %(prev)s", params
    )  # warm
    _execute("CHECKPOINT")
    _fresh_connection()
    _say(quiet, f"reference: one INSERT ... SELECT of {positions} rows into bench_reference")
    cpu_before = _backend_cpu_seconds()
    started = time.perf_counter()
    reference_rows = _execute(_REFERENCE_SQL, params)
    reference_seconds = time.perf_counter() - started
    reference_cpu = _cpu_used(cpu_before)
    _execute("DROP TABLE bench_reference")
    _execute("CHECKPOINT")

    _fresh_connection()
    _say(quiet, f"crediting {DAY} with books.tasks.credit_valuation_date_task")
    before = _rows_written()
    by_statement = _CpuByStatement()
    cpu_before = _backend_cpu_seconds()
    started = time.perf_counter()
    with connection.execute_wrapper(by_statement):
        summary = credit_valuation_date_task(DAY.isoformat())
    seconds = time.perf_counter() - started
    cpu = _cpu_used(cpu_before)
    backend_mb = _backend_peak_mb()
    if summary["status"] != "done":
        raise RuntimeError(f"crediting {DAY} did not finish: {summary}")
    after = _rows_written()
    valued = _scalar("SELECT count(*) FROM books_dailyvaluation WHERE valuation_date = %(day)s", params)

    _say(quiet, "crediting the same date again")
    rerun = credit_valuation_date_task(DAY.isoformat())
    rerun_rows_added = _rows_written() - after

    python_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {
        "positions": positions,
        "seconds": round(seconds, 3),
        "reference_seconds": round(reference_seconds, 3),
        "ratio": round(seconds / reference_seconds, 2),
        "peak_memory_mb": round(python_mb + (backend_mb or 0), 1),
        "rerun_rows_added": rerun_rows_added,
        "python_peak_rss_mb": round(python_mb, 1),
        "postgres_backend_peak_rss_mb": round(backend_mb, 1) if backend_mb is not None else None,
        "backend_cpu_seconds": cpu,
        "reference_backend_cpu_seconds": reference_cpu,
        "cpu_ratio": round(cpu / reference_cpu, 2) if cpu and reference_cpu else None,
        "backend_cpu_by_statement": by_statement.figures(),
        "rows_written": after - before,
        "positions_valued": valued,
        "reference_rows": reference_rows,
        "stats": summary["stats"],
        "rerun_status": rerun["status"],
    }


def run(*, participants: int, json: bool, paid: float = 0.0, repeat: int = 1) -> dict:
    quiet = json
    runs = []
    for n in range(max(repeat, 1)):
        with scratch_database() as name:
            _say(
                quiet,
                f"scratch database {name}: generating {participants} participants (run {n + 1} of {repeat})",
            )
            started = time.perf_counter()
            built = generate(participants=participants, paid=paid)
            _say(
                quiet,
                f"generated {built['positions']} positions, {built['pending_credits']} pending credits "
                f"in {time.perf_counter() - started:.1f}s",
            )
            result = measure(quiet=quiet)
        result["pending_credits"] = built["pending_credits"]
        runs.append(result)
    return runs[0] if len(runs) == 1 else repeated(runs)


# The figures of repeated runs: the medians of the timings and ratios (the reference alone moves by up to 40%
# between runs of the same statement), the worst of the memory and of the rerun's rows.
_MEDIANS = (
    "seconds",
    "reference_seconds",
    "ratio",
    "backend_cpu_seconds",
    "reference_backend_cpu_seconds",
    "cpu_ratio",
)
_WORST = ("peak_memory_mb", "rerun_rows_added", "python_peak_rss_mb", "postgres_backend_peak_rss_mb")


def repeated(runs: list[dict]) -> dict:
    """One result for several runs: the run of the median `ratio` (its counts and statuses), with the medians and
    worsts above, the backend CPU of each statement as medians, and each run's figures under `runs`."""
    ordered = sorted(runs, key=lambda r: r["ratio"])
    result = dict(ordered[(len(ordered) - 1) // 2])
    for key in _MEDIANS:
        values = [r[key] for r in runs if r.get(key) is not None]
        result[key] = round(statistics.median(values), 3) if values else None
    for key in _WORST:
        values = [r[key] for r in runs if r.get(key) is not None]
        result[key] = max(values) if values else None
    by_statement = [r["backend_cpu_by_statement"] for r in runs if r.get("backend_cpu_by_statement")]
    if by_statement:
        result["backend_cpu_by_statement"] = {
            label: round(statistics.median(b[label] for b in by_statement), 2) for label in by_statement[0]
        }
    result["runs"] = [
        {
            key: r.get(key)
            for key in ("ratio", "cpu_ratio", "seconds", "reference_seconds", "backend_cpu_by_statement")
        }
        for r in runs
    ]
    return result
