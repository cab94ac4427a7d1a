"""The staff reports at N participants: liability, payment forecast, elections export, claims reports.

`python manage.py bench reports --participants N [--history-days D] [--json]`, in a scratch PostgreSQL database
(or, with `--reuse-database`, on DATABASE_URL's database as a `load_demo --participants N` left it: step 1 skipped):

1. Population: `load_demo --participants N` (the demo built through the services, then copied set-based;
   operations.population), then ANALYZE.
2. Each report, timed in this process, as its page asks it: books.liability.plan_liabilities on the as-of date,
   payments.selectors.forecast from it, elections.selectors.payroll_export_rows of every account plan for the
   plan year, and the claims reports (claims_by_status_and_plan, late_decisions, average_days_to_decision). For
   each: seconds, queries (counted as they run), rows (the liability's: its CSV lines), this process's RSS before
   it and its peak RSS during it (Linux: the peak is reset before each report, /proc/self/clear_refs; elsewhere a
   running peak, so the largest figure is the whole bench's).
3. Each report prepared as a file by the report job (core.report_files.report_file_run: the CSV written in chunks
   with progress, stored as a Document), named `<report>_file`: seconds, queries, and the file's rows and bytes.

Targets (issue 15): each under 30 s and 1 GB at 100,000 participants.
"""

from __future__ import annotations

import datetime as dt
import io
import resource
import sys
import time
from collections.abc import Callable
from typing import Any

from django.core.management import call_command
from django.db import connection, transaction

from core import valuation_calendar as cal
from operations.simulation.sandbox import scratch_database


def add_arguments(parser) -> None:
    parser.add_argument("--as-of", type=dt.date.fromisoformat, default=dt.date(2026, 11, 30))
    parser.add_argument("--history-days", type=int, default=21)
    parser.add_argument(
        "--reuse-database",
        action="store_true",
        help="measure on DATABASE_URL's database as it is (a population load_demo built before), not a scratch "
        "one built now; the report files are prepared in a transaction rolled back at the end",
    )


def _peak_mb() -> float:
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


def _peak_reset() -> bool:
    """Reset this process's peak RSS (Linux: VmHWM), so that each report's own peak is read; False elsewhere."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def _status_mb(field: str) -> float | None:
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return round(int(line.split()[1]) / 1024, 1)
    except OSError:
        pass
    return None


def _timed(name: str, work: Callable[[], Any], quiet: bool) -> dict:
    # Counted as they run (connection.execute_wrapper), not read from connection.queries: that log keeps only
    # the last 9,000 statements, so a report past them counted 0.
    queries = 0

    def counted(execute, sql, params, many, context):
        nonlocal queries
        queries += 1
        return execute(sql, params, many, context)

    own_peak = _peak_reset()
    rss_before = _status_mb("VmRSS")
    started = time.perf_counter()
    with connection.execute_wrapper(counted):
        result = work()
    seconds = time.perf_counter() - started
    rows = len(result) if hasattr(result, "__len__") else None
    del result
    # The report's own peak where the OS can reset it (Linux), else the process's running peak.
    peak = _status_mb("VmHWM") if own_peak else _peak_mb()
    if not quiet:
        print(f"{name}: {seconds:.2f} s, {queries} queries, {rows} rows, peak {peak} MB", file=sys.stderr)
    return {
        "seconds": round(seconds, 2),
        "queries": queries,
        "rows": rows,
        "rss_before_mb": rss_before,
        "peak_rss_mb": peak,
    }


def _reports(as_of: dt.date) -> dict[str, Callable[[], Any]]:
    # The reports' own modules: imported here, after the scratch database is in place.
    from books.liability import plan_liabilities
    from books.report_files import liability_csv_rows
    from claims.selectors import average_days_to_decision, claims_by_status_and_plan, late_decisions
    from elections.selectors import payroll_export_rows
    from payments.selectors import forecast
    from plans.models import Plan

    def elections_export() -> list:
        rows: list = []
        for plan in Plan.objects.filter(kind=Plan.Kind.ACCOUNT_BALANCE).order_by("code"):
            rows.extend(payroll_export_rows(plan=plan, plan_year=as_of.year))
        return rows

    return {
        # The page's figures and its CSV lines (one per account kind, one per BRP participant).
        "liability": lambda: list(liability_csv_rows(plan_liabilities(as_of=as_of), as_of=as_of)),
        "forecast": lambda: forecast(start=as_of),
        "elections_export": elections_export,
        "claims_by_status": lambda: list(claims_by_status_and_plan()),
        "claims_late": lambda: list(late_decisions()),
        "claims_average_days": lambda: average_days_to_decision(),
    }


def _report_files(as_of: dt.date) -> dict[str, Callable[[], Any]]:
    # The report job and the plans: imported here, after the scratch database is in place.
    from django.utils import timezone

    from core.report_files import report_file_run  # after the scratch database is in place (above)
    from plans.models import Plan  # after the scratch database is in place (above)

    day = as_of.isoformat()
    jobs: dict[str, tuple[str, list[str]]] = {
        "liability_file": ("liability", [day]),
        "forecast_file": ("forecast", [day]),
        "forecast_by_year_file": ("forecast_by_year", [day]),
        "claims_by_status_file": ("claims_by_status", [day]),
        "claims_late_file": ("claims_late", [day]),
        "claims_average_days_file": ("claims_average_days", [day]),
    }
    for code in (
        Plan.objects.filter(kind=Plan.Kind.ACCOUNT_BALANCE).order_by("code").values_list("code", flat=True)
    ):
        jobs[f"elections_export_{code}_file"] = ("elections_export", [code, str(as_of.year)])

    def job(name: str, args: list[str]) -> Callable[[], Any]:
        return lambda: report_file_run(name=name, args=args, now=timezone.now())

    return {label: job(name, args) for label, (name, args) in jobs.items()}


def _timed_file(label: str, work: Callable[[], Any], quiet: bool) -> dict:
    timed = _timed(label, work, quiet)
    from core.models import (
        JobRun,  # the run the job just finished (imported with the scratch database in place)
    )

    run = JobRun.objects.filter(kind="report").order_by("-finished_at", "-id").first()
    stats = run.stats if run is not None else {}
    return {**timed, "rows": stats.get("rows"), "bytes": stats.get("size"), "status": run and run.status}


def population_build(participants: int, as_of: dt.date, history_days: int, quiet: bool) -> int:
    """`load_demo --participants N` in the scratch database, then ANALYZE; the number of people built."""
    call_command(
        "load_demo",
        participants=participants,
        as_of=as_of,
        history_days=history_days,
        force=True,
        stdout=io.StringIO(),
        stderr=sys.stderr if not quiet else io.StringIO(),
    )
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")
        cursor.execute("SELECT count(*) FROM participants_person")
        return cursor.fetchone()[0]


class _RolledBack(Exception):
    pass


def _measure(as_of: dt.date, quiet: bool) -> dict:
    reports = {name: _timed(name, work, quiet) for name, work in _reports(as_of).items()}
    reports |= {name: _timed_file(name, work, quiet) for name, work in _report_files(as_of).items()}
    return reports


def _counts() -> tuple[int, int]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM participants_person")
        people = cursor.fetchone()[0]
        cursor.execute("SELECT count(*) FROM books_account")
        return people, cursor.fetchone()[0]


def run(
    *,
    participants: int,
    json: bool,
    as_of: dt.date | None = None,
    history_days: int = 21,
    reuse_database: bool = False,
) -> dict:
    quiet = json
    as_of = as_of or dt.date(2026, 11, 30)
    if not cal.is_valuation_date(as_of):
        as_of = cal.previous_valuation_date(as_of)
    if connection.vendor != "postgresql":
        raise RuntimeError("bench reports needs PostgreSQL (DATABASE_URL)")
    built = 0.0
    if reuse_database:
        people, accounts = _counts()
        if not quiet:
            print(f"database {connection.settings_dict['NAME']}: {people} participants", file=sys.stderr)
        reports: dict = {}
        try:
            with transaction.atomic():  # the report files' runs and documents are not kept
                reports = _measure(as_of, quiet)
                raise _RolledBack
        except _RolledBack:
            pass
    else:
        with scratch_database() as name:
            if not quiet:
                print(f"scratch database {name}: building {participants} participants", file=sys.stderr)
            started = time.perf_counter()
            population_build(participants, as_of, history_days, quiet)
            people, accounts = _counts()
            built = time.perf_counter() - started
            reports = _measure(as_of, quiet)
    return {
        "participants": people,
        "accounts": accounts,
        "as_of": as_of.isoformat(),
        "history_days": None if reuse_database else history_days,
        "population_seconds": round(built, 1),
        "reports": reports,
        "slowest_seconds": max(r["seconds"] for r in reports.values()),
        "peak_rss_mb": _peak_mb(),
    }
